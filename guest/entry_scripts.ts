/**
 * The entry's spawn and the execution's report (seed 002 §Root-profile entries), as BusyBox shell programs: Deno
 * cannot fork a process that unshares, pivots and execs, so the helper (`entries.ts`) spawns
 *
 *     busybox unshare --mount --pid --uts --fork --propagation private -- \
 *       ROOT/.runtime-adapter-guest/busybox sh -c ENTER entry ROOT CGROUP HOSTNAME WORKDIR SETPRIV_ARGS… -- PROGRAM…
 *
 * and {@link ENTER}, PID 1 of the new PID namespace, moves itself into the workload cgroup, binds the root (with
 * what the helper bound below it) onto itself, mounts a `/proc` of
 * its own in the root (`/proc/sys` and `/proc/sysrq-trigger` read-only, so no execution lowers the unprivileged
 * port start), sets the hostname, moves the root over `/` with `pivot_root . .` and detaches the old root (nothing
 * of the guest's stays reachable, so a nested chroot cannot climb out), enters the working directory — refusing a
 * path through a magic link before the program runs — closes every descriptor above 2, and execs util-linux
 * `setpriv` from the copy in the root (through its own loader: nothing of the guest's is left to load from), which
 * cuts the bounding set to the identity's capabilities, clears the inheritable and ambient sets, sets no-new-privs
 * and the user and group IDs, and execs the program. The execution is then PID 1 of its namespace.
 *
 * The entry exits 125 with `bcd-entry: refused ERRNO: …` when it refuses the working directory, and 126 with
 * `bcd-entry: failed …` when a step fails; the program has not run in either case.
 *
 * {@link INSIDE} is the program of the probe's executions (`inside DIRECTORY DESCRIPTOR`): it reports, one
 * `KEY=VALUE` line each on standard output, what the execution sees and may do.
 *
 * @module
 */

/** The directory at the top of the root that holds the copied tools (static BusyBox, setpriv and its libraries). */
export const TOOLS_DIR = ".runtime-adapter-guest";
/** The loader the copied setpriv runs under. */
export const LOADER = "ld-linux-x86-64.so.2";

/** Exit statuses of {@link ENTER}. */
export const ENTRY_REFUSED = 125;
export const ENTRY_FAILED = 126;

/** The entry's spawn (see the module's doc). */
export const ENTER = `
root=$1 cg=$2 host=$3 wd=$4
shift 4
bb="$root/${TOOLS_DIR}/busybox"
refuse() { echo "bcd-entry: refused $*" >&2; exit ${ENTRY_REFUSED}; }
fail() { echo "bcd-entry: failed $*" >&2; exit ${ENTRY_FAILED}; }
[ -z "$cg" ] || echo 0 >"$cg/cgroup.procs" || fail "to join the cgroup $cg"
"$bb" mount --rbind "$root" "$root" || fail "to bind the root"
"$bb" mount -t proc -o nosuid,nodev,noexec proc "$root/proc" || fail "to mount /proc"
for p in sys sysrq-trigger; do
  [ -e "$root/proc/$p" ] || continue
  "$bb" mount --bind "$root/proc/$p" "$root/proc/$p" && "$bb" mount -o remount,bind,ro "$root/proc/$p" ||
    fail "to make /proc/$p read-only"
done
[ -z "$host" ] || "$bb" hostname "$host" || fail "to set the hostname"
cd "$root" && "$bb" pivot_root . . || fail "to move the root over /"
g=/${TOOLS_DIR}
bb=$g/busybox
"$bb" umount -l . || fail "to detach the old root"
cd / || fail "to enter the root"
# The working directory, one component at a time: a symbolic link in procfs below /proc/X/ (a process's
# descriptors, cwd, root: the magic links) is refused, also when an ordinary link leads there.
if [ -n "$wd" ]; then
  case $wd in /*) ;; *) refuse "EINVAL: $wd is not an absolute path" ;; esac
  cur= rest=\${wd#/} links=0
  while [ -n "$rest" ]; do
    c=\${rest%%/*}
    case $rest in */*) rest=\${rest#*/} ;; *) rest= ;; esac
    case $c in '' | .) continue ;; ..) cur=\${cur%/*}; continue ;; esac
    p=$cur/$c
    if [ -L "$p" ]; then
      case $p in /proc/*/*) refuse "ELOOP: $wd passes through the magic link $p" ;; esac
      links=$((links + 1))
      [ $links -le 40 ] || refuse "ELOOP: $wd passes through more than 40 links"
      # /proc/self and /proc/thread-self name the reader: this process, which becomes the program.
      case $p in
      /proc/self) t=$$ ;;
      /proc/thread-self) t=$$/task/$$ ;;
      *) t=$("$bb" readlink "$p") || fail "to read the link $p" ;;
      esac
      case $t in /*) cur= ;; esac
      rest=\${t#/}\${rest:+/$rest}
      continue
    fi
    [ -e "$p" ] || refuse "ENOENT: $wd: no $p"
    [ -d "$p" ] || refuse "ENOTDIR: $wd: $p is no directory"
    cur=$p
  done
  cd "\${cur:-/}" || fail "to enter $wd"
fi
for f in /proc/$$/fd/*; do
  n=\${f##*/}
  [ "$n" -gt 2 ] && [ -L "$f" ] && eval "exec $n<&-"
done
exec "$g/${LOADER}" --library-path "$g" "$g/setpriv" "$@"
`;

/** The execution's report (see the module's doc); its arguments: the case's directory and the leaked descriptor. */
export const INSIDE = `
dir=$1 leaked=$2
g=/${TOOLS_DIR}
bb=$g/busybox
# Shell builtins and reads where they do: each exec costs much under TCG.
fds=
for f in /proc/$$/fd/*; do [ -L "$f" ] && fds="$fds \${f##*/}"; done
sorted=
for n in $fds; do
  out= put=
  for m in $sorted; do
    [ -z "$put" ] && [ "$n" -lt "$m" ] && out="$out $n" && put=1
    out="$out $m"
  done
  [ -n "$put" ] || out="$out $n"
  sorted=$out
done
echo "fds=\${sorted# }"
if [ -L "/proc/$$/fd/$leaked" ]; then echo leaked=open; else echo leaked=closed; fi
while read -r k v rest; do
  case $k in
  Uid:) echo "uid=$v" ;;
  Gid:) echo "gid=$v" ;;
  Groups:) echo "groups=\${v:-none}" ;;
  CapInh:) echo "cap.inh=$v" ;;
  CapPrm:) echo "cap.prm=$v" ;;
  CapEff:) echo "cap.eff=$v" ;;
  CapBnd:) echo "cap.bnd=$v" ;;
  CapAmb:) echo "cap.amb=$v" ;;
  NoNewPrivs:) echo "no-new-privs=$v" ;;
  SigBlk:) echo "signals.blocked=$v" ;;
  esac
done </proc/$$/status
echo "pid=$$"
echo "cwd=$(pwd -P)"
# A file's first line. Not with ash's read for /proc/sys: it reads a byte at a time, and a sysctl read at an offset
# past 0 answers end of file (so "1024" read as "1").
value() { [ -e "$2" ] && echo "$1=$("$bb" head -n 1 "$2")"; }
value hostname /proc/sys/kernel/hostname
value machine-id /etc/machine-id
m=none
while read -r _ _ _ _ mp opts _; do [ "$mp" = /etc/machine-id ] && m=$opts; done </proc/self/mountinfo
echo "mount.machine-id=$m"
value threshold /proc/sys/net/ipv4/ip_unprivileged_port_start
outcome() {
  case $1 in
  *"Read-only file system"*) echo "refused EROFS" ;;
  *"Operation not permitted"* | *"are you root"*) echo "refused EPERM" ;;
  *"Permission denied"*) echo "refused EACCES" ;;
  *) echo "failed $(echo "$1" | "$bb" head -n 1)" ;;
  esac
}
# An attempt: a program, or (sh) a shell command in a subshell.
attempt() {
  name=$1
  shift
  if [ "$1" = sh ]; then out=$( (eval "$2") 2>&1 <&-); else out=$("$@" 2>&1 <&-); fi
  if [ $? = 0 ]; then echo "$name=allowed"; else echo "$name=$(outcome "$out")"; fi
}
attempt threshold.write sh 'echo 0 >/proc/sys/net/ipv4/ip_unprivileged_port_start'
attempt hostname.write sh 'echo runtime-adapter-write >/proc/sys/kernel/hostname'
attempt sysrq.write sh ': >>/proc/sysrq-trigger'
# A privileged port: nc binds it and listens, which /proc/net/tcp shows, or says why it could not. BusyBox's nc
# binds TCP only; the kernel checks a privileged UDP port the same way (inet_bind).
listening() {
  for t in /proc/net/tcp /proc/net/tcp6; do
    [ -e $t ] || continue
    while read -r _ l _ st _; do case $l in *:03FF) [ "$st" = 0A ] && return 0 ;; esac; done <$t
  done
  return 1
}
# nc runs in the background as the second process of a pipeline: ash gives a background job's first process
# /dev/null as its standard input, which the root does not have (that process, true, fails to open it and ends).
"$bb" true | "$bb" nc -l -p 1023 >&- 2>"$dir/bind.err" &
p=$!
i=0 v="failed no listener and no error after 3000 looks"
while [ $i -lt 3000 ]; do
  i=$((i + 1))
  if listening; then v=allowed; break; fi
  if [ -s "$dir/bind.err" ]; then read -r e <"$dir/bind.err"; v=$(outcome "$e"); break; fi
done
kill $p 2>&-
wait $p 2>&-
echo "bind=$v"
out=$("$bb" ping -c 1 -W 1 127.0.0.1 2>&1)
case $out in *"are you root"* | *"ermission denied"*) echo "raw=$(outcome "$out")" ;; *) echo raw=allowed ;; esac
: >"$dir/chown"
attempt chown "$bb" chown 1000 "$dir/chown"
echo dac >"$dir/dac" && "$bb" chmod 0 "$dir/dac"
attempt dac-override sh 'read -r _ <"$dir/dac"'
attempt fowner "$bb" chmod 0600 "$dir/owned"
attempt setuid "$g/${LOADER}" --library-path "$g" "$g/setpriv" --reuid=4321 -- "$bb" true
attempt setgid "$g/${LOADER}" --library-path "$g" "$g/setpriv" --regid=4321 --keep-groups -- "$bb" true
r=
for f in /.* /*; do
  case \${f#/} in . | .. | '.*' | '*') continue ;; esac
  r="$r \${f#/}"
done
echo "root=\${r# }"
`;
