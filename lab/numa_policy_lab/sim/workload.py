"""Workload profiles: how a guest's vCPUs use memory, caches and the NIC.

A guest's memory is split into segments, each with its own placement:

* ``shared``: data every vCPU reads; in a master-slave application the
  master allocates it, so first-touch puts it all on one node;
* ``io``: network buffers, written by the NIC (DMA) and read by the vCPUs;
* one ``private`` segment per vCPU, its thread's own data;
* ``cold``: the rest of the guest's memory, allocated but rarely touched.

The application classes follow the seeds: seed 000 Table 1 (low, moderate
and high access imbalance under first-touch), seed 001 §2.2 (private data,
LLC contention, inter-thread sharing) and seed 002 §6 (netperf, memcached,
YCSB).
"""

import dataclasses

# Segment order inside a guest's placement matrix.
SEG_SHARED = 0
SEG_IO = 1
FIRST_PRIVATE = 2

PATTERN_PRIVATE = 'private'
PATTERN_SHARED = 'shared'
PATTERN_MASTER_SLAVE = 'master-slave'


@dataclasses.dataclass(frozen=True)
class Profile:
    """What one vCPU of a guest running this application does."""

    name: str
    pattern: str
    # Fraction of a vCPU's memory accesses that go to the shared segment
    # and to the I/O buffers; the rest go to its private segment.
    shared_fraction: float = 0.0
    io_fraction: float = 0.0
    # Fraction of time a vCPU waits on memory when every access misses the
    # LLC and is local and uncontended (the memory intensity).
    mem_bound: float = 0.0
    # Fraction of time spent waiting on NIC DMA into the I/O buffers when
    # they are local to the NIC (network-bound work, seed 002).
    io_bound: float = 0.0
    # Fraction of time spent on cache lines shared with sibling vCPUs when
    # they sit in the same LLC (seed 001 Fig. 4(c)).
    sharing_bound: float = 0.0
    # Working set per vCPU and size of the shared data, MB.
    working_set_mb: float = 64.0
    shared_mb: float = 64.0
    io_buffer_mb: float = 16.0
    # Outstanding misses per vCPU: turns latency into bandwidth demand.
    mlp: float = 1.0
    # DMA requests per unit of DMA-bound time, as a multiple of mlp.
    io_mlp: float = 1.0
    # Network requests per second when perfectly placed (seed 002 VIOR).
    io_rate: float = 0.0

    @property
    def io_intensive_hint(self):
        return self.io_rate >= 500.0


def _p(**kwargs):
    return Profile(**kwargs)


# Calibration probes: one pointer-chasing thread (seed 000 Table 3) and the
# seed 001 micro-benchmark at two working-set sizes (Fig. 4(a)).
PROBE = _p(name='probe', pattern=PATTERN_PRIVATE, mem_bound=1.0,
           working_set_mb=4096.0, mlp=1.0)
MICROBENCH_256 = _p(name='microbench-256mb', pattern=PATTERN_PRIVATE,
                    mem_bound=0.57, working_set_mb=256.0, mlp=1.0)
MICROBENCH_16 = dataclasses.replace(MICROBENCH_256, name='microbench-16mb',
                                    working_set_mb=16.0)

PROFILES = {p.name: p for p in (
    PROBE, MICROBENCH_256, MICROBENCH_16,
    # Seed 000 Table 1 "low" (cg.C, mg.D, ua.C): each thread works on data
    # it allocated; first-touch is already right.
    _p(name='private-stream', pattern=PATTERN_PRIVATE, shared_fraction=0.05,
       mem_bound=0.6, working_set_mb=512.0, shared_mb=64.0, mlp=2.0),
    # Seed 000 Table 1 "moderate" (bt.C, sp.C, wc): part of the data comes
    # from one allocating thread.
    _p(name='moderate', pattern=PATTERN_MASTER_SLAVE, shared_fraction=0.4,
       mem_bound=0.6, working_set_mb=256.0, shared_mb=1024.0, mlp=5.0),
    # Seed 000 Table 1 "high" (ep.D, pca, kmeans, streamcluster): a master
    # allocates nearly everything the workers read.
    _p(name='master-slave', pattern=PATTERN_MASTER_SLAVE,
       shared_fraction=0.9, mem_bound=0.7, working_set_mb=256.0,
       shared_mb=2048.0, mlp=6.0),
    # Seed 001 §2.2: threads updating shared data; cross-socket sharing is
    # what BRM learns to avoid; working sets fit the LLC.
    _p(name='shared-sync', pattern=PATTERN_SHARED, shared_fraction=0.5,
       mem_bound=0.3, sharing_bound=0.06, working_set_mb=2.0,
       shared_mb=256.0, mlp=2.0),
    # Compute-bound, NUMA-insensitive (seed 001: ep, mg).
    _p(name='cpu-bound', pattern=PATTERN_PRIVATE, mem_bound=0.02,
       working_set_mb=1.0, mlp=1.0),
    # Seed 002 §6: network throughput, in-memory key-value, and YCSB (data
    # and compute intensive); the YCSB split of memory and I/O time is
    # fitted to Fig. 5.
    _p(name='netperf', pattern=PATTERN_PRIVATE, io_fraction=0.5,
       mem_bound=0.1, io_bound=0.45, working_set_mb=64.0, mlp=2.0,
       io_mlp=3.0, io_rate=5000.0),
    # Seed 002 §2.2 counts memcached as memory-intensive: its request
    # rate stays under the 500/s I/O-intensive threshold.
    _p(name='memcached', pattern=PATTERN_PRIVATE, io_fraction=0.05,
       mem_bound=0.45, io_bound=0.05, working_set_mb=768.0, mlp=3.0,
       io_mlp=2.0, io_rate=300.0),
    _p(name='ycsb', pattern=PATTERN_PRIVATE, io_fraction=0.3,
       mem_bound=0.15, io_bound=0.35, working_set_mb=768.0, mlp=3.0,
       io_mlp=3.0, io_rate=1500.0),
    _p(name='idle', pattern=PATTERN_PRIVATE, mem_bound=0.01,
       working_set_mb=1.0, io_rate=20.0),
)}
