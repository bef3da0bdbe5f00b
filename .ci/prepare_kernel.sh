#!/usr/bin/env bash
# Fetches the Debian cloud kernel the VM tests boot (fixtures/vm/, `deno task test:vm`) and unpacks it, without
# installing it, into BCD_TEST_KERNEL_DIR/root (default /var/cache/bcd-test-kernel/root): boot/vmlinuz-<version>
# and lib/modules/<version>/. Idempotent: does nothing when a kernel is already there.
set -euo pipefail
CACHE=${BCD_TEST_KERNEL_CACHE:-/var/cache/bcd-test-kernel}
ROOT="$CACHE/root"
if compgen -G "$ROOT/boot/vmlinuz-*" >/dev/null; then
  echo "test kernel present: $(ls "$ROOT"/boot/vmlinuz-*)"
  exit 0
fi
mkdir -p "$CACHE"
chmod 0777 "$CACHE" # apt-get download runs as _apt where it can
cd "$CACHE"
# The metapackage names the versioned image package it depends on; fetch both, unpack the image.
apt-get download linux-image-cloud-amd64 || { apt-get update -qq && apt-get download linux-image-cloud-amd64; }
image=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$image" ] || { echo "cannot tell which image linux-image-cloud-amd64 depends on" >&2; exit 1; }
apt-get download "$image"
rm -rf "$ROOT.tmp"
dpkg -x "$image"_*.deb "$ROOT.tmp"
mv "$ROOT.tmp" "$ROOT"
echo "test kernel: $(ls "$ROOT"/boot/vmlinuz-*)"
