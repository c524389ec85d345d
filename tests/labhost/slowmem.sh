#!/bin/sh
# The lab host's lower memory tier (tests/labhost/topology.py,
# slow_memory_mb): QEMU's label-less NVDIMM on the memory-only node $1
# arrives through ACPI's NFIT as one raw pmem namespace. It is turned
# into device-dax (a new info block: a fresh uuid, 2 MiB pages, the
# memory map of its pages kept on the device itself), then handed to
# the kernel as system RAM by dax/kmem, whose node the kernel puts in
# a lower memory tier; its memory blocks are onlined movable, as on a
# host whose CXL memory must stay hot-removable. What ndctl and daxctl
# would do, through sysfs: neither is installed here. Exits non-zero,
# saying where it stopped, if any step fails.
set -eu
node=$1
for module in nfit nd_pmem dax_pmem kmem; do modprobe "$module"; done
nd=/sys/bus/nd
first() { for entry in "$@"; do echo "${entry##*/}"; return 0; done; }
namespace=$(first "$nd"/devices/namespace*.0)
[ -e "$nd/devices/$namespace" ] || {
    echo "slowmem.sh: no NVDIMM namespace" >&2; exit 1; }
region=$(basename "$(readlink -f "$nd/devices/$namespace/..")")
echo "$namespace" > "$nd/drivers/nd_pmem/unbind"
seed=$nd/devices/$(cat "$nd/devices/$region/dax_seed")
cat /proc/sys/kernel/random/uuid > "$seed/uuid"
echo 2097152 > "$seed/align"
echo pmem > "$seed/mode"
echo "$namespace" > "$seed/namespace"
echo "${seed##*/}" > "$nd/drivers/dax_pmem/bind"
dax=$(first /sys/bus/dax/devices/dax*)
if [ -e "/sys/bus/dax/devices/$dax/driver" ]; then
    echo "$dax" > "/sys/bus/dax/devices/$dax/driver/unbind"
fi
echo "$dax" > /sys/bus/dax/drivers/kmem/new_id
# memory<N> only: newer kernels have a memory_failure directory there.
for block in /sys/devices/system/node/node"$node"/memory[0-9]*; do
    [ "$(cat "$block/state")" = online ] || echo online_movable > "$block/state"
done
grep -q 'MemTotal: *[1-9]' "/sys/devices/system/node/node$node/meminfo" || {
    echo "slowmem.sh: node $node has no memory online" >&2; exit 1; }
