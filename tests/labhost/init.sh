#!/bin/busybox sh
# /init of the lab host's initramfs (busybox). Loads the virtio and 9p
# modules, mounts this machine's root file system read-only over 9p with
# the lab's shared directory under /run/lab, and runs the guest side
# (guest.sh, named on the kernel command line) chrooted there. Powers
# off when it ends, so QEMU exits.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

arg() {
    for word in $(cat /proc/cmdline); do
        case "$word" in "lab.$1="*) echo "${word#lab.$1=}"; return;; esac
    done
}

fail() {
    echo "LAB-FAILED: $*"
    poweroff -f
}

if [ "$(arg mode)" = probe ]; then
    echo LAB-PROBE-OK
    poweroff -f
fi

while read -r module; do
    insmod "/lib/modules/$module.ko" || fail "insmod $module"
done < /lib/modules/order

R=/newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose \
    hostroot "$R" || fail "mounting the host's root"
mount -t proc proc "$R/proc"
mount -t sysfs sysfs "$R/sys"
mount -t devtmpfs devtmpfs "$R/dev"
mount -t tmpfs -o mode=0755 run "$R/run"
mkdir -p "$R/run/lab"
# The share the host exchanges requests and results through: no cache,
# so each side sees the other's files at once.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 lab "$R/run/lab" \
    || fail "mounting the lab share"
echo LAB-ROOT-MOUNTED
chroot "$R" /bin/sh "$(arg guest)"
echo "LAB-GUEST-EXITED $?"
poweroff -f
