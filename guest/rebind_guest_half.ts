/**
 * The guest half of identity rebind (000 §Identity rebind, step 3), as files a guest image installs: a udev rule that
 * starts `bc-rebind@<kernel name>.service` when the disk with virtio serial `bc-rebind` appears, the unit, and the
 * script. The script reads the tar at the disk's start (`nonce`, `account`, `principals`, and `host_key` with
 * `host_key-cert.pub` when the bundle has a host key), installs the principals as
 * `/etc/ssh/auth_principals/<account>` and the host key as `/etc/ssh/bc_host_key` (0600) with its certificate, reloads
 * sshd, and writes `BCREBOUND <nonce>` at the start of the disk's last 4 KiB, which bcd waits for. sshd reads those
 * files through the drop-in {@link REBIND_SSHD_DROPIN}.
 *
 * The script is POSIX sh and needs only `tar`, `dd`, `mktemp` and the shell (busybox is enough): the libvirt
 * end-to-end test guest runs this very text when its init sees the disk (`fixtures/libvirt/boot_image.ts`). README
 * prints all four verbatim (`roles/readme_commands_test.ts` keeps them in step).
 *
 * @module
 */

/** `/etc/udev/rules.d/99-bc-rebind.rules`. */
export const REBIND_UDEV_RULE =
  `ACTION=="add", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="vd*", ATTR{serial}=="bc-rebind", TAG+="systemd", ENV{SYSTEMD_WANTS}+="bc-rebind@%k.service"
`;

/** `/etc/systemd/system/bc-rebind@.service`. */
export const REBIND_UNIT = `[Unit]
Description=bcd identity rebind from /dev/%i
After=local-fs.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/bc-rebind /dev/%i
`;

/** `/usr/local/sbin/bc-rebind` (mode 0755). */
export const REBIND_SCRIPT = `#!/bin/sh
# bc-rebind DEVICE: installs the SSH identity bcd put on its rebind disk (virtio serial bc-rebind) and answers
# BCREBOUND <nonce> at the start of the disk's last 4 KiB (1 MiB disk: block 255 of 4 KiB).
# BC_REBIND_SYSFS and BC_REBIND_ETC move /sys and /etc (tests only).
set -eu
dev="$1"
sys="\${BC_REBIND_SYSFS:-/sys}"
etc="\${BC_REBIND_ETC:-/etc}"
name=$(basename "$dev")
if [ "$(cat "$sys/class/block/$name/serial" 2>/dev/null)" != "bc-rebind" ]; then
  echo "bc-rebind: $dev is not the rebind disk" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -x -f "$dev" -C "$work"
nonce=$(cat "$work/nonce")
account=$(cat "$work/account")
case "$nonce" in ""|*[!0-9a-f]*) echo "bc-rebind: no nonce" >&2; exit 1 ;; esac
case "$account" in ""|*[!a-z0-9_-]*) echo "bc-rebind: bad account" >&2; exit 1 ;; esac
mkdir -p "$etc/ssh/auth_principals"
cat "$work/principals" >"$etc/ssh/auth_principals/$account.tmp"
chmod 0644 "$etc/ssh/auth_principals/$account.tmp"
mv "$etc/ssh/auth_principals/$account.tmp" "$etc/ssh/auth_principals/$account"
if [ -f "$work/host_key" ]; then
  (umask 077 && cat "$work/host_key" >"$etc/ssh/bc_host_key.tmp")
  mv "$etc/ssh/bc_host_key.tmp" "$etc/ssh/bc_host_key"
  cat "$work/host_key-cert.pub" >"$etc/ssh/bc_host_key-cert.pub.tmp"
  mv "$etc/ssh/bc_host_key-cert.pub.tmp" "$etc/ssh/bc_host_key-cert.pub"
fi
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet ssh; then
  systemctl reload ssh
elif command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet sshd; then
  systemctl reload sshd
elif [ -f /run/sshd.pid ]; then
  kill -HUP "$(cat /run/sshd.pid)"
fi
printf 'BCREBOUND %s\\n' "$nonce" | dd of="$dev" bs=4096 seek=255 conv=notrunc,fsync 2>/dev/null
echo "bc-rebind: rebound $account"
`;

/** `/etc/ssh/sshd_config.d/bc-rebind.conf`: where sshd finds what the script installs. */
export const REBIND_SSHD_DROPIN = `AuthorizedPrincipalsFile /etc/ssh/auth_principals/%u
HostKey /etc/ssh/bc_host_key
HostCertificate /etc/ssh/bc_host_key-cert.pub
`;
