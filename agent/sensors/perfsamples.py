"""Hardware samples of memory accesses, as perf's ring buffer holds them: pure.

A sampling event (:mod:`agent.sensors.perfevents`) writes one record per sample
into a ring buffer the kernel shares with the reader. The layout decoded
here is the kernel's (``include/uapi/linux/perf_event.h``):

* every record starts with ``struct perf_event_header``: ``u32 type``,
  ``u16 misc``, ``u16 size`` (of the whole record);
* a ``PERF_RECORD_SAMPLE`` carries the fields its event's ``sample_type``
  asks for, in the kernel's fixed order; of those, this module reads
  ``TID`` (``u32 pid, u32 tid``), ``ADDR``, ``DATA_SRC`` and ``PHYS_ADDR``
  (``u64`` each);
* a ``PERF_RECORD_LOST`` says how many samples the kernel dropped
  because the buffer was full (``u64 id, u64 lost``).

``data_src`` says where in the memory hierarchy an access was served
(``union perf_mem_data_src``). Only accesses served by memory count here:
they are what locality is about, and a physical address then names the
node that served them (:class:`NodeRanges`, from the kernel's memory
blocks per node).
"""

import collections
import struct

import numpy

# perf_event_header.type
RECORD_LOST = 2
RECORD_SAMPLE = 9
HEADER = struct.Struct('<IHH')

# perf_event_attr.sample_type bits this module decodes.
SAMPLE_TID = 1 << 1
SAMPLE_ADDR = 1 << 3
SAMPLE_DATA_SRC = 1 << 15
SAMPLE_PHYS_ADDR = 1 << 19
DECODED = (SAMPLE_TID, SAMPLE_ADDR, SAMPLE_DATA_SRC, SAMPLE_PHYS_ADDR)

# union perf_mem_data_src: mem_lvl (14 bits from bit 5) and mem_lvl_num
# (4 bits from bit 33).
MEM_LVL_SHIFT = 5
MEM_LVL_HIT = 0x02
MEM_LVL_RAM = 0x80 | 0x100 | 0x200  # LOC_RAM, REM_RAM1, REM_RAM2
MEM_LVLNUM_SHIFT = 33
MEM_LVLNUM_MEMORY = (0x09, 0x0d, 0x0e)  # CXL, RAM, PMEM

# Node ids are below 1024 (MAX_NUMNODES of the largest kernel configs).
NODE_BITS = 10
NODE_MASK = (1 << NODE_BITS) - 1

Sample = collections.namedtuple('Sample', 'pid tid addr data_src phys_addr')


def sample_layout(sample_type):
    """Names of the u64 words of a sample record of ``sample_type``.

    ``TID`` is one word (pid, tid). Refuses a ``sample_type`` with fields
    this module does not decode: their sizes would shift the rest.
    """
    unknown = sample_type & ~sum(DECODED)
    if unknown:
        raise ValueError(f'sample_type {sample_type:#x} has fields not '
                         f'decoded here ({unknown:#x})')
    names = (('tid', SAMPLE_TID), ('addr', SAMPLE_ADDR),
             ('data_src', SAMPLE_DATA_SRC), ('phys_addr', SAMPLE_PHYS_ADDR))
    return tuple(name for name, bit in names if sample_type & bit)


def decode(data, sample_type):
    """(:class:`Columns`, lost) in ``data``, bytes read off a ring buffer.

    Records of other types (throttling, for one) are skipped; a record
    cut short (a reader that copied part of the buffer) ends the walk.
    """
    layout = sample_layout(sample_type)
    fast = _decode_uniform(data, layout)
    if fast is not None:
        return fast
    found, lost, offset = [], 0, 0
    words = struct.Struct('<%dQ' % len(layout))
    while offset + HEADER.size <= len(data):
        kind, _misc, size = HEADER.unpack_from(data, offset)
        if size < HEADER.size or offset + size > len(data):
            break
        body = offset + HEADER.size
        if kind == RECORD_SAMPLE and size >= HEADER.size + words.size:
            found.append(words.unpack_from(data, body))
        elif kind == RECORD_LOST and size >= HEADER.size + 16:
            lost += struct.unpack_from('<Q', data, body + 8)[0]
        offset += size
    records = numpy.array(found, dtype=[(name, '<u8') for name in layout])
    return Columns(records, layout), lost


def _decode_uniform(data, layout):
    """Decode at once when every record is a sample of one size, else None.

    The common case by far: a period's buffer holds thousands of samples
    and nothing else. numpy reads them as one array, not record by record.
    """
    size = HEADER.size + 8 * len(layout)
    if not data or len(data) % size:
        return None
    dtype = numpy.dtype([('type', '<u4'), ('misc', '<u2'), ('size', '<u2')]
                        + [(name, '<u8') for name in layout])
    records = numpy.frombuffer(data, dtype=dtype)
    if not ((records['type'] == RECORD_SAMPLE).all()
            and (records['size'] == size).all()):
        return None
    return Columns(records, layout), 0


class Columns:
    """Decoded samples: one numpy column per field, not a tuple each."""

    def __init__(self, records, layout):
        self._records = records
        self._layout = layout

    def column(self, name):
        if name in ('pid', 'tid'):
            word = self._records['tid'] if 'tid' in self._layout else None
            if word is None:
                return numpy.zeros(len(self._records), dtype='<u8')
            return word & 0xffffffff if name == 'pid' else word >> 32
        if name in self._layout:
            return self._records[name]
        return numpy.zeros(len(self._records), dtype='<u8')

    def __len__(self):
        return len(self._records)

    def __iter__(self):
        columns = [self.column(n).tolist() for n in Sample._fields]
        return (Sample(*values) for values in zip(*columns))


def served_by_memory(data_src):
    """Whether each ``data_src`` says memory (not a cache) served it."""
    data_src = numpy.asarray(data_src, dtype='<u8')
    level = (data_src >> MEM_LVL_SHIFT) & 0x3fff
    by_level = ((level & MEM_LVL_RAM) != 0) & ((level & MEM_LVL_HIT) != 0)
    by_number = numpy.isin((data_src >> MEM_LVLNUM_SHIFT) & 0xf,
                           MEM_LVLNUM_MEMORY)
    return by_level | by_number


class NodeRanges:
    """Which node holds a physical address: the host's memory blocks.

    ``blocks``: {node: memory block numbers} and ``block_size`` in bytes,
    as ``/sys/devices/system/node/node<N>/memory<M>`` and
    ``/sys/devices/system/memory/block_size_bytes`` give them (see
    :func:`agent.sensors.sysfs.memory_blocks`). Block ``M`` covers
    ``[M * block_size, (M + 1) * block_size)``.
    """

    def __init__(self, blocks, block_size):
        owner = sorted((block, node) for node, numbers in blocks.items()
                       for block in numbers)
        self._blocks = numpy.array([b for b, _ in owner], dtype='<u8')
        self._nodes = numpy.array([n for _, n in owner], dtype='<i8')
        self.block_size = block_size

    def nodes_of(self, phys_addrs):
        """The node of each address (numpy), -1 where no block covers it."""
        blocks = numpy.asarray(phys_addrs, dtype='<u8') // numpy.uint64(
            self.block_size)
        if not len(self._blocks):
            return numpy.full(len(blocks), -1, dtype='<i8')
        index = numpy.searchsorted(self._blocks, blocks)
        index = numpy.minimum(index, len(self._blocks) - 1)
        found = self._blocks[index] == blocks
        return numpy.where(found, self._nodes[index], -1)


def tally(samples, ranges, memory_only=True):
    """{tid: {node: samples}} of the accesses memory served, per node.

    ``samples``: the :class:`Columns` :func:`decode` gave. A sample with
    no physical address, one no memory block covers, or
    (``memory_only``, for events that say where data came from) one a
    cache served counts nowhere.
    """
    phys = samples.column('phys_addr')
    keep = phys != 0
    if memory_only:
        keep &= served_by_memory(samples.column('data_src'))
    nodes = ranges.nodes_of(phys[keep])
    tids = samples.column('tid')[keep]
    known = nodes >= 0
    if not known.any():
        return {}
    # One sort of (tid, node) keys: a node id fits in NODE_BITS.
    keys = (tids[known].astype('<i8') << NODE_BITS) | nodes[known]
    unique, counts = numpy.unique(keys, return_counts=True)
    found = collections.defaultdict(dict)
    for key, count in zip(unique.tolist(), counts.tolist()):
        found[key >> NODE_BITS][key & NODE_MASK] = count
    return dict(found)


def merge(into, counts):
    """Add ``counts`` ({tid: {node: n}}) into ``into``, in place."""
    for tid, per_node in counts.items():
        mine = into.setdefault(tid, {})
        for node, count in per_node.items():
            mine[node] = mine.get(node, 0) + count
    return into
