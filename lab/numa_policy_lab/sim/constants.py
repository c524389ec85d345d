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

# A lower memory tier: a CPU-less node of CXL-attached DRAM (a memory
# expander), below the CPU nodes' tier (topology.LowerTier). Its figures
# come from three published works, none of them a seed; where they differ
# the range is stated, and the value used is inside every range given.
#
# LOWER_TIER_ADDED_NS: latency added to an access over the local DRAM of
# the node whose socket the expander hangs off, in ns (turned into cycles
# at each host's clock). 80 ns, the middle of:
#
# * Pond (Li et al., ASPLOS '23): CXL "will add 70-90ns to access latencies
#   over same-NUMA-node DRAM" for a pool of 8-16 sockets, more than 180 ns
#   for rack-scale pooling; its emulation bracketed CXL at 182 % and 222 %
#   of local latency;
# * TPP (Maruf et al., ASPLOS '23): "CXL adds around 50-100 nanoseconds of
#   extra latency over normal DRAM access", similar to a NUMA hop.
#
# On the model's latency table (seed 000 Table 3, 156 cycles local) that
# is 2.1x (amd48, 2.2 GHz) to 2.2x (xeon2, 2.4 GHz) the local latency and
# 1.2x to 1.3x one hop. Sun et al. (MICRO '23, three real CXL devices on
# an Intel Sapphire Rapids host) measured their fastest device (an ASIC)
# about 35 % slower than DDR5 a socket away and the two others about 2x
# and 3x: the value here is the fast end of real devices. Those three
# ratios are as summaries of the paper report them, read without its
# tables: unsure to a few points.
LOWER_TIER_ADDED_NS = 80.0

# LOWER_TIER_BANDWIDTH_SHARE: the expander's bandwidth as a share of one
# CPU node's memory controller (SimHost.mc_gbps). Sun et al. (MICRO '23):
# their fastest device, one DDR5-4800 channel behind the CXL controller,
# reached 46 % of its 38.4 GB/s on reads, where a DDR5-4800 channel a
# socket away reached 70 %; one sub-NUMA node of their host has two such
# channels. One device against one node is then 0.46 / (2 x 0.70) = 0.33.
# Their two other devices reach 47 % of 19.2 GB/s and 20 % of 25.6 GB/s:
# 0.16 and 0.09 on the same count. Efficiencies as summaries of the paper
# report them: unsure to a few points; the share is the fast end.
LOWER_TIER_BANDWIDTH_SHARE = round(0.46 / (2 * 0.70), 2)
