"""Sampling events of the kernel's perf interface: open, map, drain.

The edge between :mod:`agent.sensors.perfsamples` (what records mean) and the
kernel: perf_event_open(2) through ctypes, and the ring buffer it shares
with the reader (``struct perf_event_mmap_page``: the kernel advances
``data_head`` as it writes, the reader ``data_tail`` as it consumes).
What a PMU is called and which bits its options set come from sysfs
(``/sys/bus/event_source/devices/<pmu>/{type,format/}``), as perf(1)
reads them.
"""

import ctypes
import mmap
import os
import platform
import re
import struct

EVENT_SOURCES = 'sys/bus/event_source/devices'
# perf_event_attr, PERF_ATTR_SIZE_VER5: every field used here, and a size
# each kernel since 4.1 accepts.
ATTR_SIZE = 112
TYPE_SOFTWARE = 1
TYPE_BREAKPOINT = 5
# perf_event_attr flag bits.
FLAG_EXCLUDE_KERNEL = 1 << 5
FLAG_EXCLUDE_HV = 1 << 6
FLAG_FD_CLOEXEC = 1 << 3  # perf_event_open(2)'s flags argument
# struct perf_event_mmap_page: offsets of data_head, data_tail,
# data_offset and data_size.
HEAD, TAIL, DATA_OFFSET, DATA_SIZE = 1024, 1032, 1040, 1048
_SYSCALL = {'x86_64': 298, 'aarch64': 241, 'ppc64le': 319, 's390x': 331}
_FORMAT = re.compile(r'^(config[12]?):(\d+)(?:-(\d+))?$')

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def pmu_type(root, pmu):
    """The ``type`` the kernel gave ``pmu``, None if it has no such PMU."""
    try:
        with open(os.path.join(root, EVENT_SOURCES, pmu, 'type')) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def pmu_formats(root, pmu):
    """{option: (config word, low bit, high bit)} of ``pmu``'s options.

    Each ``format/<option>`` file says where the option lies, as
    ``config:19`` or ``config:0-15``.
    """
    directory = os.path.join(root, EVENT_SOURCES, pmu, 'format')
    formats = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return formats
    for name in names:
        try:
            with open(os.path.join(directory, name)) as f:
                match = _FORMAT.match(f.read().strip())
        except OSError:
            continue
        if match:
            low = int(match.group(2))
            formats[name] = (match.group(1), low,
                             int(match.group(3) or low))
    return formats


def config_with(formats, **options):
    """``config`` with each named option of ``formats`` set to its value.

    Options the PMU does not have are left out: the caller asks for
    ``l3missonly`` where the CPU can filter, and samples more otherwise.
    """
    config = 0
    for name, value in options.items():
        word, low, high = formats.get(name, (None, 0, 0))
        if word != 'config':
            continue
        config |= (value & ((1 << (high - low + 1)) - 1)) << low
    return config


def attr(type_, config=0, sample_period=1, sample_type=0, flags=0,
         bp_type=0, bp_addr=0, bp_len=0):
    """The bytes of a ``struct perf_event_attr`` asking for these."""
    buffer = bytearray(ATTR_SIZE)
    struct.pack_into('<IIQQQQQIIQQ', buffer, 0, type_, ATTR_SIZE, config,
                     sample_period, sample_type, 0, flags, 0, bp_type,
                     bp_addr, bp_len)
    return bytes(buffer)


def open_event(attr_bytes, pid=-1, cpu=-1):
    """A perf event's file descriptor; OSError with the kernel's errno.

    ``pid`` -1 and a ``cpu``: every thread on that CPU; a ``pid`` (a
    thread id) and ``cpu`` -1: that thread wherever it runs.
    """
    number = _SYSCALL.get(platform.machine())
    if number is None:
        raise OSError(38, f'perf_event_open is not known on '
                          f'{platform.machine()} here')
    buffer = ctypes.create_string_buffer(attr_bytes, len(attr_bytes))
    fd = _libc.syscall(number, buffer, ctypes.c_int(pid), ctypes.c_int(cpu),
                       ctypes.c_int(-1), ctypes.c_ulong(FLAG_FD_CLOEXEC))
    if fd < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return fd


class Ring:
    """The ring buffer of one event: its samples, drained as they come."""

    def __init__(self, fd, pages):
        """``pages``: the data area's pages, a power of two."""
        if pages < 1 or pages & (pages - 1):
            raise ValueError(f'{pages} data pages: a power of two')
        self.fd = fd
        self._map = mmap.mmap(fd, (1 + pages) * mmap.PAGESIZE,
                              mmap.MAP_SHARED,
                              mmap.PROT_READ | mmap.PROT_WRITE)
        offset, size = struct.unpack_from('<QQ', self._map, DATA_OFFSET)
        # Kernels before 4.1 leave both zero: the data follow the first page.
        self._offset = offset or mmap.PAGESIZE
        self._size = size or pages * mmap.PAGESIZE

    def drain(self):
        """The bytes written since the last drain, in order; frees them."""
        head = struct.unpack_from('<Q', self._map, HEAD)[0]
        tail = struct.unpack_from('<Q', self._map, TAIL)[0]
        if head == tail:
            return b''
        start, length = tail % self._size, head - tail
        first = min(length, self._size - start)
        data = self._map[self._offset + start:self._offset + start + first]
        if first < length:
            data += self._map[self._offset:self._offset + length - first]
        # Records are read (copied) before the space is given back.
        struct.pack_into('<Q', self._map, TAIL, head)
        return data

    def close(self):
        self._map.close()
        os.close(self.fd)
