"""Calibration constants of the simulated NUMA host, each with its source.

The seeds give measured points, not a model; the constants below are the
smallest set that lets one model reproduce all of them. ``doc/source/
simulator.rst`` lists every calibration point and ``tests/unit/sim/
test_calibration.py`` checks each is reproduced within 10 %.
"""

# Seed 000, Table 3 (AMD48, 1 thread): uncontended load-to-use latency, in
# cycles, by interconnect hops between the accessing CPU and the memory.
LATENCY_BY_HOPS = (156, 276, 383)

# Seed 000, Table 3 (48 threads on one node): contention is modelled as a
# queue at each memory controller, delay = MC_QUEUE_CYCLES * rho **
# MC_QUEUE_EXPONENT / (1 - rho) with rho its utilization; the square keeps
# one thread alone (Table 3, 1 thread) at its uncontended latency. Fitted
# so that 48 pointer-chasing threads on one node's memory give 697 / 740 /
# 863 cycles (local / 1 hop / 2 hops); reproduced as 660 / 784 / 891.
MC_QUEUE_CYCLES = 420.0
MC_QUEUE_EXPONENT = 2

# The same form for a node's interconnect port (all links of the node):
# remote accesses pay it on the busier of their two end ports. Kept small
# enough that seed 000 Table 3 (links not saturated) stays within 10 %.
LINK_QUEUE_CYCLES = 100.0
# Links are credit-pipelined: their delay only grows close to saturation
# (seed 000 note 3: the link metric tops out near 80 % when saturated), so
# the port queue is rho ** LINK_QUEUE_EXPONENT / (1 - rho).
LINK_QUEUE_EXPONENT = 3

# Seed 002 Fig. 5: remote memory alone costs 18 %, a remote NIC alone
# 34 %, both 59 %, more than the sum. A packet the NIC writes to remote
# memory and a vCPU then reads remotely crosses the interconnect twice on
# the same path; its extra latency is IO_PATH_SHARING * L0 * (NIC-to-buffer
# excess) * (vCPU-to-buffer excess), excesses relative to local latency L0.
# Fitted to the "both remote" point (mapping 6).
IO_PATH_SHARING = 0.94

# The I/O handling of a packet: the NIC's interrupt vector that signals it
# and the guest's vhost worker that copies it between host and guest
# buffers. Where either runs on a node other than the buffers', the packet
# path pays, per packet, WEIGHT * (latency from that node to the buffers
# - local latency), in cycles: zero when the handling is local, growing
# with the hops (LATENCY_BY_HOPS). Both weights are ESTIMATES: seed 002
# measured with the interrupt affinity tuned (spread over all cores, its
# §3.2.4, which says interrupts "will not cause much interconnection
# consumption") and gives no number for interrupts or I/O threads alone.
# Derived from its Fig. 5 (YCSB, NIC on node 0), the model's zero being
# its tuned setting:
#
# * IO_THREAD_CROSSING: a vhost worker reads or writes every byte of each
#   packet, as the NIC's DMA does. Assumed: a remote worker's crossing
#   costs what the DMA's crossing to remote buffers costs, the one
#   crossing of the packet path the seed measures alone (mappings 1 and
#   5: -34 % at two hops, reproduced by the DMA term). Weight 1.0.
# * IRQ_CROSSING: the interrupt carries no payload. Fig. 5's two remote
#   crossings on one path (mapping 6, -59 %) cost 59 - 18 - 34 = 7 points
#   more than the remote memory (mapping 2, -18 %) and the remote NIC
#   (-34 %) apart: the only part of the measured path that is neither a
#   crossing of the payload nor the vCPU's own reads. Assumed: that
#   excess is the control path's (interrupt and wake-up, taken two hops
#   from the buffers in mapping 6), so an interrupt taken remotely costs
#   7 / 34 of a payload crossing at the same distance. Weight 0.206.
#
# Handling adds latency only: its crossings' traffic is not added to the
# interconnect ports (the seed's §3.2.4: interrupts load it little; a
# remote vhost copy loads it as much as the DMA, so under a congested
# link the estimate is low).
IO_THREAD_CROSSING = 1.0
IRQ_CROSSING = round(7.0 / 34.0, 3)

# Utilization is clipped here so the queue delay stays finite; above it a
# resource is saturated and its users are throttled by the delay instead.
RHO_MAX = 0.97

# Seed 001 Fig. 4(a): remote access hurts only beyond the LLC, 26 % at
# 16 MB and 44 % at 256 MB on a 12 MB LLC; the fraction of accesses missing
# the LLC is modelled as 1 - (llc / working set) ** LLC_MISS_EXPONENT.
LLC_MISS_EXPONENT = 3.0

# Bytes moved per memory access (one cache line).
LINE_BYTES = 64

# Fixed-point iterations and damping of the closed loop (threads slowed by
# contention issue fewer accesses, which lowers contention). Near a
# saturated controller a damping of 0.5 settles into a two-period
# oscillation whose average is not the fixed point (draining a saturated
# node then appeared to slow every guest); 0.8 converges: 60 iterations
# agree with 600 at damping 0.95 to 1e-7 on every scenario.
FIXED_POINT_ITERATIONS = 60
FIXED_POINT_DAMPING = 0.8
