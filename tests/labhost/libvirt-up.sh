#!/bin/sh
# Starts virtlogd and libvirtd in the lab host (again, after a kill), the
# way a compute node runs them, except: no security driver (no AppArmor
# or SELinux in the lab), and the agent's group may use the socket
# without polkit. Exits once libvirtd answers.
set -eu
conf=/etc/libvirt
grep -q '^# lab host' "$conf/qemu.conf" || cat >> "$conf/qemu.conf" <<'CONF'
# lab host
security_driver = "none"
CONF
# No keepalive requests from libvirtd: a client answers them on its
# libvirt event thread, and nova-compute runs its lifecycle handlers on
# that thread; under emulation they have taken over the 30 s libvirtd
# waits by default, it closed nova-compute's connection, and nova-compute
# then hung on its own connection lock (nova/virt/libvirt/host.py, its
# close callback run by the thread that holds the lock). The lab's
# clients are local (a dead one closes its socket) or the linked lab
# host's libvirtd, which still sends its own (qemu.conf's keepalive).
grep -q '^# lab host' "$conf/libvirtd.conf" || cat >> "$conf/libvirtd.conf" <<'CONF'
# lab host
unix_sock_group = "libvirt"
unix_sock_rw_perms = "0770"
auth_unix_ro = "none"
auth_unix_rw = "none"
keepalive_interval = -1
CONF
# A lab host linked to another (tests/labhost/network.py) takes
# connections from it on the link's address, with no authentication, as
# live migration between libvirtds needs: the link reaches only the
# other lab host.
listen=
if [ -n "${LAB_LINK_ADDRESS:-}" ]; then
    listen=--listen
    grep -q '^# lab host link' "$conf/libvirtd.conf" ||
        cat >> "$conf/libvirtd.conf" <<CONF
# lab host link
listen_tls = 0
listen_tcp = 1
listen_addr = "${LAB_LINK_ADDRESS%/*}"
auth_tcp = "none"
CONF
fi
mkdir -p /run/libvirt /var/log/libvirt/qemu /var/lib/libvirt/qemu \
    /var/cache/libvirt/qemu
pidof virtlogd >/dev/null || /usr/sbin/virtlogd -d
# shellcheck disable=SC2086 # $listen: empty or one word
pidof libvirtd >/dev/null || /usr/sbin/libvirtd -d $listen
for _ in $(seq 300); do
    if virsh -q -c qemu:///system version >/dev/null 2>&1; then
        exit 0
    fi
    sleep 0.2
done
echo "libvirtd did not answer; its log:" >&2
tail -n 20 /var/log/libvirt/libvirtd.log >&2 || true
exit 1
