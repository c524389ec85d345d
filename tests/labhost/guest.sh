#!/bin/sh
# The lab host's own set-up, chrooted on this machine's root file system
# (read-only, over 9p): state on tmpfs, cgroup2, writable copies of the
# few files of /etc the lab changes, then the request server
# (tests/labhost/server.py) in the project's own virtualenv.
set -eu
. /run/lab/config.sh

# A kernel other than this machine's (tests/labhost/labkernel.py): its
# modules, in the lab's cache, where modprobe looks for them. This
# machine's root is read-only here and has no directory for them.
if [ -n "${LAB_MODULES:-}" ]; then
    mount --bind "$LAB_MODULES" /lib/modules
fi

# Directories the host found closed to other users on the way to the
# interpreter and the project (e.g. /root with pyenv in it, .tox): each
# becomes an open tmpfs whose entries are the originals, bound back.
expose() {
    hidden="/run/lab-closed$1"
    mkdir -p "$hidden"
    mount --bind "$1" "$hidden"
    mount -t tmpfs -o mode=0755 tmpfs "$1"
    for entry in "$hidden"/* "$hidden"/.[!.]* "$hidden"/..?*; do
        [ -e "$entry" ] || [ -L "$entry" ] || continue
        target="$1/${entry##*/}"
        if [ -L "$entry" ]; then
            cp -P "$entry" "$target"
        elif [ -d "$entry" ]; then
            mkdir "$target" && mount --bind "$entry" "$target"
        else
            : > "$target" && mount --bind "$entry" "$target"
        fi
    done
}
# Scratch directories of the lab host's own, with what it needs of this
# machine's (a project cloned in /tmp) bound back at the same paths.
mkdir -p /run/lab-scratch
for dir in /tmp /var/tmp; do
    mkdir -p "/run/lab-scratch$dir"
    mount --bind "$dir" "/run/lab-scratch$dir"
    mount -t tmpfs -o mode=1777 tmpfs "$dir"
done
for path in $LAB_KEEP; do
    mkdir -p "$path"
    mount --bind "/run/lab-scratch$path" "$path"
done

for dir in $LAB_EXPOSE; do expose "$dir"; done

for dir in /var/log /var/lib/libvirt /var/cache/libvirt; do
    [ -d "$dir" ] && mount -t tmpfs -o mode=0755 tmpfs "$dir"
done
mount -t cgroup2 cgroup2 /sys/fs/cgroup
for controller in cpuset cpu memory pids; do
    echo "+$controller" > /sys/fs/cgroup/cgroup.subtree_control || true
done

# /etc and /usr/bin writable, as on a compute node being set up: an
# overlay of tmpfs over this machine's read-only originals.
writable() {
    layer="/run/lab-overlay$1"
    mkdir -p "$layer/upper" "$layer/work"
    mount -t overlay overlay \
        -o "lowerdir=$1,upperdir=$layer/upper,workdir=$layer/work" "$1"
}
writable /etc
writable /usr/bin

# The agent's user, as a compute node has it: nova, in libvirt's group.
if ! grep -q '^nova:' /etc/passwd; then
    echo "nova:x:$LAB_NOVA_UID:$LAB_NOVA_UID:nova:/tmp:/bin/sh" \
        >> /etc/passwd
    echo "nova:x:$LAB_NOVA_UID:" >> /etc/group
    echo "nova:!:19000:0:99999:7:::" >> /etc/shadow
fi
awk -F: -v OFS=: '$1 == "libvirt" && $4 !~ /(^|,)nova(,|$)/ {
    $4 = ($4 == "" ? "nova" : $4 ",nova") } 1' /etc/group > /tmp/group.new
cat /tmp/group.new > /etc/group
mkdir -p /etc/nova

echo "$LAB_HOSTNAME" > /etc/hostname
hostname "$LAB_HOSTNAME"
ip link set lo up
# The cloud tier's NICs, when the host asked for them
# (tests/labhost/network.py): found by MAC address, named, addressed.
# The topology's NIC keeps the name eth0 the host tier knows it by.
nic_up() {
    for dev in /sys/class/net/*; do
        [ "$(cat "$dev/address")" = "$1" ] || continue
        ip link set "${dev##*/}" name "$2"
        ip addr add "$3" dev "$2"
        ip link set "$2" up
        return 0
    done
    echo "guest.sh: no NIC with the MAC address $1" >&2
    return 1
}
if [ -n "${LAB_CLOUD_MAC:-}" ]; then
    nic_up "$LAB_CLOUD_MAC" "${LAB_CLOUD_NIC:?}" "$LAB_CLOUD_ADDRESS"
fi
if [ -n "${LAB_LINK_MAC:-}" ]; then
    nic_up "$LAB_LINK_MAC" "${LAB_LINK_NIC:?}" "$LAB_LINK_ADDRESS"
fi
set -- /sys/class/net/eth*
if [ ! -e /sys/class/net/eth0 ] && [ "$#" = 1 ] && [ -e "$1" ]; then
    ip link set "${1##*/}" name eth0
fi
# Names resolve inside the lab host, never beyond it: its own name in
# /etc/hosts (sudo, libvirtd and virsh ask for it), and the resolver
# pointed at the lab host's own loopback, where a query is refused at
# once. This machine's resolver is out of reach, and every lookup of
# the host's name waited seconds for its timeout.
echo "127.0.1.1 $LAB_HOSTNAME" >> /etc/hosts
rm -f /etc/resolv.conf
echo "nameserver 127.0.0.1" > /etc/resolv.conf
# eventlet resolves names through dnspython unless told not to, which
# costs each Python process that imports it (the privsep daemon, the
# agent) seconds under emulation; the lab host has no DNS to serve.
# The server's children inherit it; sudo keeps it for theirs (a lab
# host's own rule, beside the project's as shipped).
export EVENTLET_NO_GREENDNS=yes
echo 'Defaults env_keep += "EVENTLET_NO_GREENDNS"' \
    > /etc/sudoers.d/lab-environment
chmod 0440 /etc/sudoers.d/lab-environment

# NUMA balancing scans a task at most every second of its CPU time here,
# not every minute: the kernel lengthens a task's scan period (up to
# scan_period_max_ms, 60 s by default) while its scans find no faults,
# and a TCG guest spends its first minutes in firmware. The tests wait
# for the kernel's samples; the mechanism is the same, only sooner.
mount -t debugfs debugfs /sys/kernel/debug
echo 1000 > /sys/kernel/debug/sched/numa_balancing/scan_period_max_ms

# A lower memory tier, when the topology has one (slowmem.sh).
if [ -n "${LAB_SLOW_NODE:-}" ]; then
    sh "$LAB_PROJECT/tests/labhost/slowmem.sh" "$LAB_SLOW_NODE"
fi

# sshd, when the host asked for a forward to it (tests/labhost/ssh.py):
# the program unpacked in the lab's cache, a host key made now on tmpfs,
# root in by the host's one key only. Its privilege separation needs
# its user and an empty directory of root's.
if [ -n "${LAB_SSH_SSHD:-}" ]; then
    if ! grep -q '^sshd:' /etc/passwd; then
        echo "sshd:x:$((LAB_NOVA_UID + 1)):65534::/run/sshd:/usr/sbin/nologin" \
            >> /etc/passwd
        echo "sshd:!:19000:0:99999:7:::" >> /etc/shadow
    fi
    mkdir -m 0755 /run/sshd
    mkdir -m 0700 "$LAB_SSH_DIR"
    printf '%s\n' "$LAB_SSH_AUTHORIZED_KEY" > "$LAB_SSH_DIR/authorized_keys"
    chmod 0600 "$LAB_SSH_DIR/authorized_keys"
    printf '%s' "$LAB_SSH_CONFIG" > "$LAB_SSH_DIR/sshd_config"
    LD_LIBRARY_PATH="$LAB_SSH_LIBRARY_PATH" "$LAB_SSH_KEYGEN" -q \
        -t ed25519 -N '' -f "$LAB_SSH_DIR/ssh_host_ed25519_key"
    # Absolute, as sshd re-executes itself for each connection; it
    # detaches once it listens.
    LD_LIBRARY_PATH="$LAB_SSH_LIBRARY_PATH" "$LAB_SSH_SSHD" \
        -f "$LAB_SSH_DIR/sshd_config" -E "$LAB_SSH_DIR/sshd.log"
fi

mkdir -p /tmp/root
export HOME=/tmp/root PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd "$LAB_PROJECT"
exec "$LAB_PYTHON" -m tests.labhost.server /run/lab
