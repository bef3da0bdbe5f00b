#!/bin/sh
# busybox udhcpc's event script in the provisioning ramdisk: configures the interface udhcpc leased an address on
# (address, default route, resolvers) with busybox ip, and says so on the console.
case "$1" in
  deconfig)
    ip -4 addr flush dev "$interface"
    ip link set "$interface" up
    ;;
  bound | renew)
    ip -4 addr flush dev "$interface"
    ip -4 addr add "$ip/${mask:-24}" dev "$interface"
    if [ -n "$router" ]; then
      set -- $router
      ip -4 route replace default via "$1" dev "$interface"
    fi
    if [ -n "$dns" ]; then
      : >/etc/resolv.conf
      for d in $dns; do echo "nameserver $d" >>/etc/resolv.conf; done
    fi
    echo "bcd-ramdisk: dhcp $interface $ip/${mask:-24} router ${router:-none}" >/dev/console
    ;;
esac
exit 0
