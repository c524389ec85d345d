"""The access daemon's entry points: DAMON watching tiered guests.

Soft-dirty bits (:mod:`agent.privsep.pagemover`) say which pages a guest
wrote; DAMON (the kernel's Data Access MONitor, ``CONFIG_DAMON_VADDR``
and ``CONFIG_DAMON_SYSFS``, in Debian's 6.12 and not its 6.1) also sees
reads: it samples the accessed bits of a process's page tables and
keeps, per address region, how often it was accessed
(``nr_accesses``, samples per aggregation interval) and for how many
intervals that has stayed so (``age``).

The privileged entry points (:data:`agent.privsep.access`, root with no
capability: DAMON's sysfs files are root's and ask for none) are
:func:`watch`, :func:`regions` and :func:`release`. They use one
kdamond per guest (a kdamond's regions name no target, so one target
each), under ``/sys/kernel/mm/damon/admin``, each watching one checked
guest QEMU process (:mod:`agent.privsep.trust`) with a ``stat`` scheme,
which changes nothing and lists every region it was tried on. They
touch DAMON only when it is free (no kdamond) or theirs: a marker in
``/run`` says the kdamonds are the agent's, and is gone at reboot with
them; kdamonds someone else made are left alone.

What the agent makes of the regions is :mod:`agent.backend.accesses`.
"""

import logging
import os

from agent import privsep

LOG = logging.getLogger(__name__)

ADMIN = '/sys/kernel/mm/damon/admin'
MARKER = '/run/nova-numa-policy-damon'
# The widest access pattern: every region, whatever its size, access
# count and age (sysfs reads unsigned long and unsigned int).
ULONG_MAX = (1 << 64) - 1
UINT_MAX = (1 << 32) - 1
WIDEST = (('sz', ULONG_MAX), ('nr_accesses', UINT_MAX), ('age', UINT_MAX))
# DAMON's own region bounds per target (its defaults).
MIN_REGIONS, MAX_REGIONS = 10, 1000
# What the agent may ask for: a sample from 1 ms to 1 s, an aggregation
# of at least one sample and at most a minute.
SAMPLE_US = (1000, 1000000)
AGGREGATION_US_MAX = 60000000


class DamonBusy(PermissionError):
    """DAMON runs kdamonds that are not the agent's."""


class NoDamon(FileNotFoundError):
    """This kernel has no DAMON sysfs interface."""


def _write(path, value):
    with open(path, 'w') as f:
        f.write(f'{value}\n')


def _read(path):
    with open(path) as f:
        return f.read().strip()


def kdamond_dir(admin, index):
    return os.path.join(admin, 'kdamonds', str(index))


def setup_writes(admin, index, pid, sample_us, aggr_us):
    """(path, value) to write, in order, for kdamond ``index``: pure.

    One context of virtual address operations, one target, one ``stat``
    scheme over every region.
    """
    context = os.path.join(kdamond_dir(admin, index), 'contexts')
    ctx = os.path.join(context, '0')
    attrs = os.path.join(ctx, 'monitoring_attrs')
    scheme = os.path.join(ctx, 'schemes', '0')
    writes = [(os.path.join(context, 'nr_contexts'), 1),
              (os.path.join(ctx, 'operations'), 'vaddr'),
              (os.path.join(attrs, 'intervals', 'sample_us'), sample_us),
              (os.path.join(attrs, 'intervals', 'aggr_us'), aggr_us),
              (os.path.join(attrs, 'intervals', 'update_us'), aggr_us),
              # max before min: the kernel refuses a min above the max.
              (os.path.join(attrs, 'nr_regions', 'max'), MAX_REGIONS),
              (os.path.join(attrs, 'nr_regions', 'min'), MIN_REGIONS),
              (os.path.join(ctx, 'targets', 'nr_targets'), 1),
              (os.path.join(ctx, 'targets', '0', 'pid_target'), pid),
              (os.path.join(ctx, 'schemes', 'nr_schemes'), 1),
              (os.path.join(scheme, 'action'), 'stat')]
    for name, most in WIDEST:
        pattern = os.path.join(scheme, 'access_pattern', name)
        writes += [(os.path.join(pattern, 'max'), most),
                   (os.path.join(pattern, 'min'), 0)]
    return writes


def intervals(sample_us, aggr_us):
    """(sample_us, aggr_us) as integers in bounds; ValueError if not."""
    sample_us, aggr_us = int(sample_us), int(aggr_us)
    if not (SAMPLE_US[0] <= sample_us <= SAMPLE_US[1]
            and sample_us <= aggr_us <= AGGREGATION_US_MAX):
        raise ValueError(f'DAMON intervals out of bounds: sample '
                         f'{sample_us} us, aggregation {aggr_us} us')
    return sample_us, aggr_us


def parse_regions(texts):
    """[(start, end, nr_accesses, age)] of tried regions' files: pure.

    ``texts``: per region, its ``start``, ``end``, ``nr_accesses`` and
    ``age`` files' contents.
    """
    return sorted(tuple(int(region[name]) for name in
                        ('start', 'end', 'nr_accesses', 'age'))
                  for region in texts)


def _kdamonds(admin):
    return int(_read(os.path.join(admin, 'kdamonds', 'nr_kdamonds')))


def _ours(admin, marker):
    if not os.path.isdir(admin):
        raise NoDamon(f'this kernel has no DAMON sysfs interface ({admin}: '
                      f'CONFIG_DAMON_SYSFS and CONFIG_DAMON_VADDR)')
    return _kdamonds(admin) == 0 or os.path.exists(marker)


def _stop_all(admin):
    for index in range(_kdamonds(admin)):
        state = os.path.join(kdamond_dir(admin, index), 'state')
        if _read(state) == 'on':
            _write(state, 'off')


def watched(admin, marker):
    """{pid: kdamond index} of the agent's running kdamonds."""
    if not os.path.exists(marker):
        return {}
    found = {}
    for index in range(_kdamonds(admin)):
        kdamond = kdamond_dir(admin, index)
        if _read(os.path.join(kdamond, 'state')) != 'on':
            continue
        pid = _read(os.path.join(kdamond, 'contexts', '0', 'targets', '0',
                                 'pid_target'))
        found[int(pid)] = index
    return found


def start_watching(pids, sample_us, aggr_us, admin=ADMIN, marker=MARKER):
    """One kdamond per pid, each on; the agent's earlier ones replaced."""
    if not _ours(admin, marker):
        raise DamonBusy(f'DAMON runs kdamonds that are not ours ({admin})')
    _stop_all(admin)
    _write(os.path.join(admin, 'kdamonds', 'nr_kdamonds'), len(pids))
    if not pids:
        if os.path.exists(marker):
            os.unlink(marker)
        return
    _write(marker, 'kdamonds of numa-policy-agent')
    for index, pid in enumerate(pids):
        for path, value in setup_writes(admin, index, pid, sample_us,
                                        aggr_us):
            _write(path, value)
        _write(os.path.join(kdamond_dir(admin, index), 'state'), 'on')


def tried_regions(index, admin=ADMIN):
    """The regions kdamond ``index``'s scheme was last tried on."""
    kdamond = kdamond_dir(admin, index)
    _write(os.path.join(kdamond, 'state'), 'update_schemes_tried_regions')
    tried = os.path.join(kdamond, 'contexts', '0', 'schemes', '0',
                         'tried_regions')
    texts = []
    for name in os.listdir(tried):
        if name.isdigit():
            texts.append({field: _read(os.path.join(tried, name, field))
                          for field in ('start', 'end', 'nr_accesses',
                                        'age')})
    return parse_regions(texts)


def _live_guests(pids):
    """The checked guests among ``pids``; one that ended is left out."""
    for pid in pids:
        try:
            yield privsep.checked_guest(
                pid, section=privsep.ACCESS_SECTION).pid
        except ProcessLookupError:
            continue


@privsep.access.entrypoint
def watch(pids, sample_us, aggr_us):
    """DAMON on each of ``pids`` (checked guests), and on nothing else.

    Returns the pids watched (a guest that ended is not). Nothing
    changes when those already are.
    """
    sample_us, aggr_us = intervals(sample_us, aggr_us)
    pids = sorted(_live_guests(pids))
    if sorted(watched(ADMIN, MARKER)) == pids:
        return pids
    start_watching(pids, sample_us, aggr_us)
    LOG.info('DAMON watching guests %s', pids)
    return pids


@privsep.access.entrypoint
def regions(pid):
    """[(start, end, nr_accesses, age)] of a watched guest; None if not."""
    index = watched(ADMIN, MARKER).get(privsep.checked_guest(
        pid, section=privsep.ACCESS_SECTION).pid)
    if index is None:
        return None
    return tried_regions(index)


@privsep.access.entrypoint
def release():
    """Stop and remove the agent's kdamonds; leave anyone else's."""
    if os.path.exists(MARKER):
        start_watching([], 0, 0)
