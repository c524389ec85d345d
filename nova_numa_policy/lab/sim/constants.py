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
