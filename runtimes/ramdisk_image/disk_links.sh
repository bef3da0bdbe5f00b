# /dev/disk/by-id links in the provisioning ramdisk (busybox sh; sourced by /init). The ramdisk has no udev, and bcd
# names disks only by their by-id name (core/disks/disk_id.ts), so this makes the links udev's
# 60-persistent-storage rules would, from what sysfs says, for the disks the ramdisk drives:
#   virtio  virtio-<serial>                        (/sys/block/vdX/serial; a disk without a serial gets none, as in udev)
#   NVMe    nvme-<model>_<serial> and nvme-<wwid>  (the controller's model and serial; the namespace's wwid, eui.* or nvme.*)
#   SCSI    wwn-0x<naa> from an naa. wwid, else scsi-<wwid>   (SATA behind libata and virtio-scsi included)
# and <name>-partN for each partition. Characters outside [A-Za-z0-9._:+@-] become "_", as udev's replacement does.
# bcd_disk_links DEV_DIR SYS_DIR: (re)makes the links under DEV_DIR/disk/by-id; links to devices gone are removed.
bcd_disk_links() {
  _dev=${1:-/dev}
  _sys=${2:-/sys}
  mkdir -p "$_dev/disk/by-id"
  for _l in "$_dev"/disk/by-id/*; do
    [ -L "$_l" ] && [ ! -e "$_l" ] && rm -f "$_l"
  done
  for _b in "$_sys"/block/*; do
    [ -e "$_b" ] || continue
    _k=${_b##*/}
    _ids=
    case "$_k" in
      vd*) [ -s "$_b/serial" ] && _ids="virtio-$(_bcd_clean "$(cat "$_b/serial")")" ;;
      nvme*)
        [ -s "$_b/device/model" ] && [ -s "$_b/device/serial" ] &&
          _ids="nvme-$(_bcd_clean "$(cat "$_b/device/model")")_$(_bcd_clean "$(cat "$_b/device/serial")")"
        [ -s "$_b/wwid" ] && _ids="$_ids nvme-$(_bcd_clean "$(cat "$_b/wwid")")" ;;
      sd*)
        if [ -s "$_b/device/wwid" ]; then
          _w=$(cat "$_b/device/wwid")
          case "$_w" in
            naa.*) _ids="wwn-0x$(_bcd_clean "${_w#naa.}")" ;;
            *) _ids="scsi-$(_bcd_clean "$_w")" ;;
          esac
        fi ;;
      *) continue ;;
    esac
    for _id in $_ids; do
      ln -sfn "../../$_k" "$_dev/disk/by-id/$_id"
      for _p in "$_b"/"$_k"*; do
        [ -e "$_p/partition" ] || continue
        ln -sfn "../../${_p##*/}" "$_dev/disk/by-id/$_id-part$(cat "$_p/partition")"
      done
    done
  done
}

# _bcd_clean TEXT: TEXT without leading and trailing blanks, inner runs of blanks as one "_", other characters outside
# [A-Za-z0-9._:+@-] as "_".
_bcd_clean() {
  echo "$1" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e 's/[[:space:]][[:space:]]*/_/g' -e 's/[^A-Za-z0-9._:+@-]/_/g'
}
