#!/usr/bin/env bash
# Starts (start) or stops (stop) the libvirtd the libvirt tests use. There is no systemd on CI machines, so this makes
# what the packages' units and udev rules would: the kvm and libvirt-qemu groups and user, libvirt's run, log and state
# directories, /dev/kvm as root:kvm 0660 (without it libvirt re-probes QEMU on every define, about 30 s each), then
# `virtlogd -d` and `libvirtd -d` with their PIDs in .ci/.libvirtd/. `stop` ends exactly those PIDs. A libvirtd that
# already answers is left alone and not stopped. Tests start their own when this did not run
# (fixtures/libvirt/libvirtd.ts).
set -u
dir="$(cd "$(dirname "$0")" && pwd)/.libvirtd" # absolute: the daemons chdir to / before they write their pidfiles
case "${1:-}" in
start)
  command -v libvirtd >/dev/null && command -v virtlogd >/dev/null || { echo "libvirtd not installed; libvirt tests will skip"; exit 0; }
  if virsh -c qemu:///system version >/dev/null 2>&1; then echo "libvirtd already answers; using it"; exit 0; fi
  for g in kvm libvirt-qemu libvirt; do getent group "$g" >/dev/null || groupadd -r "$g"; done
  getent passwd libvirt-qemu >/dev/null ||
    useradd -r -g kvm -G libvirt-qemu -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu
  [ -c /dev/kvm ] && chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
  mkdir -p /var/run/libvirt /var/log/libvirt/qemu /var/lib/libvirt/qemu /var/cache/libvirt/qemu "$dir"
  virtlogd -d -p "$dir/virtlogd.pid" && libvirtd -d -p "$dir/libvirtd.pid" || { echo "libvirtd did not start"; exit 0; }
  for _ in $(seq 1 150); do virsh -c qemu:///system version >/dev/null 2>&1 && break; sleep 0.1; done
  echo "libvirtd started (pid $(cat "$dir/libvirtd.pid"), virtlogd pid $(cat "$dir/virtlogd.pid"))"
  ;;
stop)
  for f in libvirtd virtlogd; do
    [ -f "$dir/$f.pid" ] || continue
    pid=$(cat "$dir/$f.pid")
    kill "$pid" 2>/dev/null && for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    rm -f "$dir/$f.pid"
  done
  ;;
*) echo "usage: $0 start|stop"; exit 2 ;;
esac
