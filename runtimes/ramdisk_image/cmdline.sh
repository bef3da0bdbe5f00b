# The provisioning ramdisk's kernel command line (busybox sh; sourced by /init and by cmdline_test.ts).
#
# bcd_parse_cmdline FILE reads FILE (/proc/cmdline) and sets:
#   BCD_JOIN_TOKEN  bcd.join_token=T   the one-time join token: 1-512 of [A-Za-z0-9._~+/=-]   (required)
#   BCD_JOIN_URL    bcd.join_url=U     https://... of the gateway's join endpoint, at most 2048 characters (required)
#   BCD_GATEWAY     bcd.gateway=U      wss://... of the session endpoint (optional: else the join answer's)
#   BCD_LOG_LEVEL   bcd.log_level=L    trace, debug, info (default), warn, error or fatal
# Each refused word prints one line "bcd-ramdisk: cmdline: ..." naming the parameter and why; an unknown bcd.*
# parameter is named and ignored. A parameter given twice: the last one counts (the kernel's own rule). The value is
# never evaluated (globbing is off; the one eval assigns by name). Returns 0 when the join token and join URL are there and valid, else 1.
bcd_parse_cmdline() {
  BCD_JOIN_TOKEN=
  BCD_JOIN_URL=
  BCD_GATEWAY=
  BCD_LOG_LEVEL=info
  _bcd_bad=0
  _bcd_words=$(cat "$1") || { echo "bcd-ramdisk: cmdline: cannot read $1"; return 1; }
  set -f
  for _bcd_w in $_bcd_words; do
    case "$_bcd_w" in
      bcd.join_token=*)
        _bcd_v=${_bcd_w#bcd.join_token=}
        case "$_bcd_v" in
          "" | *[!A-Za-z0-9._~+/=-]*) echo "bcd-ramdisk: cmdline: bcd.join_token holds a character outside [A-Za-z0-9._~+/=-] or is empty"; _bcd_bad=1 ;;
          *) if [ ${#_bcd_v} -gt 512 ]; then
               echo "bcd-ramdisk: cmdline: bcd.join_token is ${#_bcd_v} characters (at most 512)"; _bcd_bad=1
             else BCD_JOIN_TOKEN=$_bcd_v; fi ;;
        esac ;;
      bcd.join_url=*) _bcd_url BCD_JOIN_URL bcd.join_url https:// "${_bcd_w#bcd.join_url=}" || _bcd_bad=1 ;;
      bcd.gateway=*) _bcd_url BCD_GATEWAY bcd.gateway wss:// "${_bcd_w#bcd.gateway=}" || _bcd_bad=1 ;;
      bcd.log_level=*)
        case "${_bcd_w#bcd.log_level=}" in
          trace | debug | info | warn | error | fatal) BCD_LOG_LEVEL=${_bcd_w#bcd.log_level=} ;;
          *) echo "bcd-ramdisk: cmdline: bcd.log_level must be trace, debug, info, warn, error or fatal"; _bcd_bad=1 ;;
        esac ;;
      bcd.*) echo "bcd-ramdisk: cmdline: unknown parameter ${_bcd_w%%=*} ignored" ;;
    esac
  done
  set +f
  [ -n "$BCD_JOIN_TOKEN" ] || { echo "bcd-ramdisk: cmdline: no bcd.join_token: the ramdisk cannot join"; _bcd_bad=1; }
  [ -n "$BCD_JOIN_URL" ] || { echo "bcd-ramdisk: cmdline: no bcd.join_url: the ramdisk cannot join"; _bcd_bad=1; }
  return $_bcd_bad
}

# _bcd_url VAR NAME SCHEME VALUE: sets VAR to VALUE when it starts with SCHEME, has a host and holds only URL characters.
_bcd_url() {
  case "$4" in
    "$3"*) ;;
    *) echo "bcd-ramdisk: cmdline: $2 must start with $3"; return 1 ;;
  esac
  case "$4" in
    "$3" | "$3"/*) echo "bcd-ramdisk: cmdline: $2 names no host"; return 1 ;;
    *[!A-Za-z0-9._~:/?#@!\$\&\'\(\)*+,\;=%\[\]-]*) echo "bcd-ramdisk: cmdline: $2 holds a character a URL cannot"; return 1 ;;
  esac
  if [ ${#4} -gt 2048 ]; then echo "bcd-ramdisk: cmdline: $2 is ${#4} characters (at most 2048)"; return 1; fi
  eval "$1=\$4"
}
