#!/bin/sh
# /init of the bcd provisioning ramdisk (busybox sh as PID 1; built by runtimes/ramdisk_image/archive.ts). It mounts
# proc/sys/dev, loads the disk and NIC modules (dependencies first, /lib/modules/load-order), makes the
# /dev/disk/by-id links (disk_links.sh), brings the network up by DHCP (busybox udhcpc on each NIC until one leases),
# reads the join token and gateway URLs from the kernel command line (cmdline.sh), starts bcd-helper (role ramdisk)
# and, once its socket is there, joins with the one-time token and runs bcd-ramdisk. The helper and the agent are
# restarted when they exit; PID 1 never exits. Every line for the operator starts "bcd-ramdisk:".
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /run /tmp
mount -t tmpfs -o mode=0755,nosuid,nodev run /run
mount -t tmpfs -o mode=1777,nosuid,nodev tmp /tmp
exec </dev/console >/dev/console 2>&1
say() { echo "bcd-ramdisk: $*"; }
say "init at $(cut -d' ' -f1 /proc/uptime) s, kernel $(uname -r)"
. /etc/bcd/cmdline.sh
. /etc/bcd/disk_links.sh

while read -r m; do
  insmod "/lib/modules/$m.ko" || say "insmod $m failed"
done </lib/modules/load-order

# Disks probe asynchronously: wait until the list of block devices is the same twice, half a second apart (5 s at most).
_prev=
i=0
while [ $i -lt 10 ]; do
  _now=$(ls /sys/block)
  [ -n "$_prev" ] && [ "$_now" = "$_prev" ] && break
  _prev=$_now
  sleep 0.5
  i=$((i + 1))
done
bcd_disk_links /dev /sys
say "disks: $(ls /dev/disk/by-id | tr '\n' ' ')"
# Partitions appear and go while the ramdisk works (deploy.image writes a partition table): keep the links current.
(while sleep 3; do bcd_disk_links /dev /sys; done) &

if ! bcd_parse_cmdline /proc/cmdline; then
  say "the kernel command line does not say how to join (see above); nothing to run"
  while true; do sleep 3600; done
fi
export BCD_LOG_LEVEL HOME=/root DENO_DIR=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
[ -f /etc/bcd/gateway-ca.pem ] && export DENO_CERT=/etc/bcd/gateway-ca.pem

ip link set lo up
network() {
  for n in /sys/class/net/*; do
    [ -e "$n/device" ] || continue
    ip link set "${n##*/}" up
  done
  for n in /sys/class/net/*; do
    [ -e "$n/device" ] || continue
    udhcpc -i "${n##*/}" -s /etc/bcd/udhcpc.sh -t 4 -T 2 -n -p "/run/udhcpc.${n##*/}.pid" >/dev/null 2>&1 && return 0
  done
  return 1
}
wait_s=2
until network; do
  say "network: no DHCP lease on $(ls /sys/class/net | tr '\n' ' '); again in $wait_s s"
  sleep $wait_s
  [ $wait_s -lt 60 ] && wait_s=$((wait_s * 2))
done

(
  while true; do
    /opt/bcd/bcd-helper/bcd-helper serve --config /etc/bcd/config.toml
    say "helper exited $?; restarting in 2 s"
    sleep 2
  done
) &
i=0
until [ -S /run/bcd/helper.sock ]; do
  i=$((i + 1))
  [ $((i % 60)) -eq 0 ] && say "waiting for the helper's socket /run/bcd/helper.sock"
  sleep 0.5
done
say "helper up at $(cut -d' ' -f1 /proc/uptime) s"

wait_s=2
until [ -f /run/bcd/identity.json ] || /opt/bcd/bcd-ramdisk/bcd-ramdisk join --config /etc/bcd/config.toml \
  --token "$BCD_JOIN_TOKEN" --join-url "$BCD_JOIN_URL"; do
  say "join failed; again in $wait_s s"
  sleep $wait_s
  [ $wait_s -lt 60 ] && wait_s=$((wait_s * 2))
done
say "joined at $(cut -d' ' -f1 /proc/uptime) s"

while true; do
  if [ -n "$BCD_GATEWAY" ]; then
    /opt/bcd/bcd-ramdisk/bcd-ramdisk run --config /etc/bcd/config.toml --gateway "$BCD_GATEWAY"
  else
    /opt/bcd/bcd-ramdisk/bcd-ramdisk run --config /etc/bcd/config.toml
  fi
  say "agent exited $?; restarting in 5 s"
  sleep 5
done
