"""Benchmark: nova's default filters and weighers, alone and with ours.

For 1000 (and up to 10,000) synthetic hosts with fresh reports, time one
scheduling pass (filter + weigh) of a plain and of a NUMA-policy request:
nova alone, nova plus our individual classes (three filters, two weighers),
nova plus the combined ones (NumaFilter, NumaWeigher), and nova plus a
filter and a weigher that do nothing (noop: the floor any one more filter
and weigher costs in nova's own handlers). Each of ours is
timed three ways:

* *after reports*: every host's report has just been replaced (ingested
  again, untimed: its cost is in the ingest rate), so each summary holds
  only what ingest primed for the shapes requested recently;
* *warm*: the same shape again, with the same reports;
* *new shape*: the first request of a shape nobody asked for since the
  reports arrived: every host is assessed on the request's path. This
  happens once per new flavor shape; afterwards ingest primes it.

Runs are
interleaved, rotating their order, so drift hits every configuration; the
ratio is the median over repetitions of each run against the nova run of
the same repetition. Also reports the ingest rate through the real cache
on one core.

The passes at --count-hosts are also counted in instructions, under
callgrind (tests/bench/callgrind.py): a count does not move with the
neighbours' load, so the ratio target is held on it (and on CPU time
only when callgrind is missing); the added microseconds per host, held
on CPU time at every host count, show the cost staying flat.

Targets, checked for every row of --gate configurations (the combined
classes by default): added cost <= 10 us per host at every host count (so
the cost per host stays flat: linear); ratio <= 1.03 for the steady state
(after reports, warm); ingest >= 5,000 reports/s with PRIMED_SHAPES shapes
in use. The ratio of a new shape is printed beside them, not held to
1.03. Exits 1 when a target is missed, naming it.

Run: python -m tests.bench.scheduler --hosts 1000 10000 --repeat 7
"""

import argparse
import datetime
import gc
import statistics
import sys
import time
import uuid

from oslo_config import cfg

from nova import context as nova_context
from nova import objects
from nova.scheduler import filters as nova_filters
from nova.scheduler import weights as nova_weights
from nova.tests.unit.scheduler import fakes
from oslo_utils import timeutils

from nova_numa_policy import conf as numa_conf  # noqa: F401
import placement_filters
from placement_filters import assessors
from placement_filters import base
from placement_filters import cache as cache_mod
from placement_filters import listener
from tests.bench import callgrind
from tests.unit.scheduler import reports

CONF = cfg.CONF
NOVA_FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter']


class NoopFilter(nova_filters.BaseHostFilter):
    """Passes every host unseen: what nova spends on one more filter."""

    RUN_ON_REBUILD = False

    def filter_all(self, filter_obj_list, spec_obj):
        return filter_obj_list

    def host_passes(self, host_state, spec_obj):
        return True


class NoopWeigher(nova_weights.BaseHostWeigher):
    """Weighs every host 0: what nova spends on one more weigher."""

    def weigh_objects(self, weighed_obj_list, weight_properties):
        return [0.0] * len(weighed_obj_list)

    def _weigh_object(self, host_state, weight_properties):
        return 0.0


CONFIGS = {
    # name: (our filters, loader of our weighers)
    'individual': (['NumaPolicyFilter', 'NumaNicLocalityFilter',
                    'NumaNodeLoadFilter'], placement_filters.all_weighers),
    'combined': (['NumaFilter'], placement_filters.combined_weighers),
    # The floor under the combined classes: one filter and one weigher
    # that do nothing cost this much in nova's handlers alone.
    'noop': (['NoopFilter'], lambda: [NoopWeigher]),
}
TARGET_RATIO = 1.03
TARGET_US_PER_HOST = 10.0
TARGET_INGEST = 5000.0
# Runs held to the ratio target: the steady state of a cloud scheduling a
# handful of flavors while reports keep arriving.
RATIO_GATED = ('after reports', 'warm')
REQUESTS = {
    'plain': {},
    'numa-policy': {'hw:numa_policy': 'interleave',
                    'hw:numa_nic_locality': 'required'},
}


def _host_state(i):
    now = timeutils.utcnow()
    return fakes.FakeHostState(f'host{i}', f'host{i}', {
        'service': {'disabled': False, 'updated_at': now,
                    'created_at': now, 'forced_down': False},
        'free_ram_mb': 65536 - (i % 97) * 64, 'total_usable_ram_mb': 131072,
        'free_disk_mb': 10 ** 6, 'vcpus_total': 32, 'vcpus_used': i % 31,
        'cpu_allocation_ratio': 4.0, 'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0, 'num_io_ops': i % 7,
        'num_instances': i % 11, 'hypervisor_version': 9000000,
        'failed_builds': 0, 'cell_uuid': 'cell1', 'aggregates': [],
        'metrics': objects.MonitorMetricList(objects=[]),
        'pci_stats': None, 'numa_topology': None, 'instances': {},
        'supported_instances': [('x86_64', 'kvm', 'hvm')],
        'hypervisor_type': 'QEMU', 'cpu_info': '',
    })


def _payload(i, when):
    busy = 0.2 + (i % 10) * 0.07
    return reports.make_payload(
        host=f'host{i}', nodes=((16, busy, 32768), (16, 0.3, 32768)),
        nics=((i % 2, 'physnet1'),), generated_at=when, seq=1)


def _spec(extra_specs, vcpus=2):
    flavor = objects.Flavor(vcpus=vcpus, memory_mb=1024 * vcpus, root_gb=10,
                            ephemeral_gb=0, swap=0, extra_specs=extra_specs)
    return objects.RequestSpec(
        flavor=flavor, image=objects.ImageMeta(
            properties=objects.ImageMetaProps()),
        instance_uuid=str(uuid.uuid4()), num_instances=1,
        ignore_hosts=None, force_hosts=None, force_nodes=None,
        scheduler_hints={}, instance_group=None,
        requested_destination=None, numa_topology=None,
        network_metadata=objects.NetworkMetadata(physnets=set(),
                                                 tunneled=False),
        project_id='p', user_id='u', availability_zone=None,
        pci_requests=None, is_bfv=False)


class Pipeline:
    """Filters then weighers, the way nova's scheduler runs them."""

    def __init__(self, filter_names, our_weighers=None):
        filter_handler = nova_filters.HostFilterHandler()
        classes = filter_handler.get_matching_classes(
            ['nova.scheduler.filters.all_filters',
             'placement_filters.all_filters'])
        by_name = {cls.__name__: cls for cls in classes + [NoopFilter]}
        self.filters = [by_name[name]() for name in filter_names]
        weigher_classes = nova_weights.all_weighers() + (
            our_weighers() if our_weighers else [])
        self.weighers = [cls() for cls in weigher_classes]
        self.filter_handler = filter_handler
        self.weight_handler = nova_weights.HostWeightHandler()

    def run(self, hosts, spec):
        passed = self.filter_handler.get_filtered_objects(
            self.filters, hosts, spec)
        weighed = self.weight_handler.get_weighed_objects(
            self.weighers, list(passed), spec)
        return weighed[0].obj if weighed else None


def _time(pipeline, hosts, spec, before=None, inner=1):
    """The fastest of ``inner`` passes, in CPU seconds.

    CPU time of this (single-threaded) process: on a shared machine, time
    spent waiting for a core is the neighbours' load, not our cost. The
    fastest of a few back-to-back passes sheds the rest of that noise.
    ``before`` runs untimed ahead of each pass. A full collection first,
    so a generation-2 collection triggered by whoever allocated before
    does not land in one configuration's pass.
    """
    best = None
    for _ in range(inner):
        if before is not None:
            before()
        gc.collect()
        start = time.process_time()
        pipeline.run(hosts, spec)
        elapsed = time.process_time() - start
        best = elapsed if best is None else min(best, elapsed)
    return best


def _forget_assessments(cache):
    # What a round of reports does: every host's summary is new, so its
    # memo is empty. Cheaper than re-ingesting, which is measured apart.
    for summary in cache.snapshot().values():
        summary.memo.clear()


def _reingest(cache, payloads):
    # A round of reports: every summary is replaced by a new one, primed
    # at ingest for the shapes requested recently.
    for payload in payloads:
        cache.ingest(payload)


def _runs(blocks, cache, payloads):
    """(run name, pipeline, untimed preparation or None), in block order.

    nova runs once; each of ours after reports, warm and for a new shape.
    """
    kinds = (('after reports', lambda: _reingest(cache, payloads)),
             ('warm', None),
             ('new shape', lambda: _forget_assessments(cache)))
    for name, pipeline in blocks:
        if name == 'nova':
            yield name, pipeline, None
            continue
        for kind, before in kinds:
            yield f'{name} {kind}', pipeline, before


def _rounds(blocks, cache, payloads, hosts, spec, inner):
    """One repetition: {run name: seconds}, blocks in the given order."""
    return {run: _time(pipeline, hosts, spec, before, inner)
            for run, pipeline, before in _runs(blocks, cache, payloads)}


def _setup(n_hosts):
    """(cache, payloads, hosts, blocks) of a cloud of ``n_hosts``."""
    cache = cache_mod.ReportCache(max_hosts=max(n_hosts, 1), ttl=3600,
                                  max_report_bytes=1 << 20, io_rate=500)
    when = datetime.datetime.now(datetime.timezone.utc)
    payloads = [_payload(i, when) for i in range(n_hosts)]
    _reingest(cache, payloads)
    listener.RUNTIME.install(cache)
    hosts = [_host_state(i) for i in range(n_hosts)]
    blocks = [('nova', Pipeline(NOVA_FILTERS))] + [
        (name, Pipeline(NOVA_FILTERS + filters, weighers))
        for name, (filters, weighers) in CONFIGS.items()]
    return cache, payloads, hosts, blocks


def count_instructions(n_hosts_list, sections):
    """Each run's pass once, as a callgrind section (the child's side).

    Every pass is preceded by an unmeasured one of the same kind, so that
    first-call effects (lazy imports, caches of nova's) are not counted.
    """
    for n_hosts in n_hosts_list:
        cache, payloads, hosts, blocks = _setup(n_hosts)
        for request, extra_specs in REQUESTS.items():
            spec = _spec(extra_specs)
            for run, pipeline, before in _runs(blocks, cache, payloads):
                _count(sections, f'{n_hosts}|{request}|{run}',
                       lambda: pipeline.run(hosts, spec), before)


def _count(sections, name, one_pass, before):
    for measured in (False, True):
        if before is not None:
            before()
        gc.collect()
        if measured:
            sections.measure(name, one_pass)
        else:
            one_pass()


def instruction_rows(counts):
    """{(hosts, request, run): (nova, ours)} from the sections' counts."""
    rows = {}
    for name, ours in counts.items():
        n_hosts, request, run = name.split('|')
        if run != 'nova':
            rows[(int(n_hosts), request, run)] = (
                counts[f'{n_hosts}|{request}|nova'], ours)
    return rows


def instruction_misses(rows, gate):
    out = []
    for (n_hosts, request, run), (nova, ours) in sorted(rows.items()):
        config, kind = run.split(' ', 1)
        if config in gate and kind in RATIO_GATED and (
                ours / nova > TARGET_RATIO):
            out.append(f'{n_hosts} hosts, {request}, {run}: instructions '
                       f'ratio {ours / nova:.3f} > {TARGET_RATIO}')
    return out


def print_instructions(rows):
    print('instructions of one filter+weigh pass (callgrind)')
    print('hosts  request      run                        nova Minstr  '
          '+ours Minstr  ratio  added instr/host')
    for (n_hosts, request, run), (nova, ours) in sorted(rows.items()):
        print(f'{n_hosts:5d}  {request:11s}  {run:24s} {nova / 1e6:12.1f}  '
              f'{ours / 1e6:12.1f}  {ours / nova:5.3f}  '
              f'{(ours - nova) / n_hosts:8.0f}', flush=True)


def _passing(pipeline, hosts, spec):
    # Printed beside the times: a pass over fewer hosts (stale reports,
    # say) would look cheap for the wrong reason.
    return len(pipeline.filter_handler.get_filtered_objects(
        pipeline.filters, hosts, spec))


def compare(n_hosts, repeat, inner):
    """{(request, run): medians} for ``n_hosts``.

    The medians are of nova's time, ours, their ratio and their difference
    per repetition, in seconds.
    """
    cache, payloads, hosts, blocks = _setup(n_hosts)
    rows = {}
    for request, extra_specs in REQUESTS.items():
        spec = _spec(extra_specs)
        print(f'{n_hosts:5d}  {request:11s}  our filters pass '
              f'{_passing(dict(blocks)["combined"], hosts, spec)} of '
              f'{n_hosts} hosts',
              flush=True)
        samples = []
        for rep in range(repeat):
            # Rotate which configuration runs first, so warming effects
            # and drift do not always favour the same one.
            turn = rep % len(blocks)
            samples.append(_rounds(blocks[turn:] + blocks[:turn], cache,
                                   payloads, hosts, spec, inner))
        for run in samples[0]:
            if run != 'nova':
                rows[(request, run)] = (
                    statistics.median(s['nova'] for s in samples),
                    statistics.median(s[run] for s in samples),
                    statistics.median(s[run] / s['nova'] for s in samples),
                    statistics.median(s[run] - s['nova'] for s in samples))
    return rows


def _use_shapes(count):
    # Requests of ``count`` flavor shapes: ingest primes each of them.
    settings = base.settings()
    for vcpus in range(1, count + 1):
        assessors.assessor_for(base.request_for(_spec(
            REQUESTS['numa-policy'] if vcpus % 2 else {},
            vcpus=vcpus)), settings)


def ingest_rate(count=3000):
    _use_shapes(assessors.PRIMED_SHAPES)
    cache = cache_mod.ReportCache(max_hosts=count, ttl=3600,
                                  max_report_bytes=1 << 20, io_rate=500)
    when = datetime.datetime.now(datetime.timezone.utc)
    instances = [reports.make_instance(str(uuid.uuid4()), {'0': 1024},
                                       io_rate=100.0) for _ in range(4)]
    payloads = [reports.make_payload(
        host=f'host{i}', nodes=((16, 0.3, 32768),) * 2,
        nics=((0, 'physnet1'), (1, 'physnet2')), instances=instances,
        generated_at=when) for i in range(count)]
    start = time.process_time()
    for payload in payloads:
        cache.ingest(payload)
    return count / (time.process_time() - start), cache.accepted


def _counted_rows(count_hosts):
    if not count_hosts:
        return {}
    lacking = callgrind.missing()
    if lacking is not None:
        print(f'instruction counts skipped: {lacking}; the ratio target is '
              f'held on CPU time')
        return {}
    return instruction_rows(callgrind.run(
        'tests.bench.scheduler',
        ['--callgrind-child', '--count-hosts'] + [str(n) for n in
                                                  count_hosts]))


def misses(n_hosts, rows, gate, ratio_held=True):
    """Target misses of one host count's rows, as sentences.

    ``ratio_held``: False where the ratio was held on instruction counts
    instead, which a neighbour's load does not move.
    """
    out = []
    for (request, run), (_, _, ratio, added) in rows.items():
        if run.split()[0] not in gate:
            continue
        added = added / n_hosts * 1e6
        if (ratio_held and run.split(' ', 1)[1] in RATIO_GATED
                and ratio > TARGET_RATIO):
            out.append(f'{n_hosts} hosts, {request}, {run}: ratio '
                       f'{ratio:.3f} > {TARGET_RATIO}')
        if added > TARGET_US_PER_HOST:
            out.append(f'{n_hosts} hosts, {request}, {run}: {added:.1f} '
                       f'us/host added > {TARGET_US_PER_HOST}')
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog='tests.bench.scheduler')
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--repeat', type=int, default=7)
    parser.add_argument('--inner', type=int, default=3,
                        help='passes per run, the fastest counts')
    # The combined classes are the configuration documented for clouds of
    # more than a few hundred hosts; the individual ones are printed.
    parser.add_argument('--gate', nargs='+', choices=sorted(CONFIGS),
                        default=['combined'],
                        help='configurations held to the targets')
    parser.add_argument('--count-hosts', type=int, nargs='*',
                        default=[1000],
                        help='host counts whose passes are also counted '
                             'in instructions under callgrind (none: '
                             'skip); the ratio target is then held on '
                             'these counts')
    parser.add_argument('--callgrind-child', action='store_true',
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    CONF([], project='nova')
    # Minutes pass between building the hosts and the last pass (more
    # under callgrind): they must neither look down to ComputeFilter nor
    # have stale reports, which strict mode treats as no report at all.
    CONF.set_override('service_down_time', 10 ** 9)
    CONF.set_override('report_ttl', 10 ** 9, group='numa_policy_scheduler')
    objects.register_all()
    nova_context.get_admin_context()
    if args.callgrind_child:
        count_instructions(args.count_hosts, callgrind.Sections())
        listener.RUNTIME.stop()
        return 0
    missed = []
    counted = _counted_rows(args.count_hosts)
    if counted:
        print_instructions(counted)
        missed += instruction_misses(counted, args.gate)
    print(f'CPU time of one filter+weigh pass (fastest of {args.inner}); '
          f'medians over {args.repeat} interleaved repetitions')
    print('hosts  request      run                        nova ms   '
          '+ours ms  ratio  added us/host')
    for n_hosts in args.hosts:
        rows = compare(n_hosts, args.repeat, args.inner)
        for (request, run), (alone, plus, ratio, added) in rows.items():
            print(f'{n_hosts:5d}  {request:11s}  {run:24s} '
                  f'{alone * 1e3:9.2f}  {plus * 1e3:9.2f}  {ratio:5.3f}  '
                  f'{added / n_hosts * 1e6:6.2f}', flush=True)
        # With instruction counts the ratio is held on them; the cost per
        # host staying flat up to 10,000 hosts carries it over.
        missed += misses(n_hosts, rows, args.gate, ratio_held=not counted)
    rate = statistics.median(ingest_rate()[0] for _ in range(3))
    print(f'ingest: {rate:,.0f} reports/s on one core (median of 3), '
          f'{assessors.PRIMED_SHAPES} shapes primed per report')
    if rate < TARGET_INGEST:
        missed.append(f'ingest {rate:,.0f} reports/s < {TARGET_INGEST:,.0f}')
    listener.RUNTIME.stop()
    for miss in missed:
        print(f'TARGET MISSED: {miss}')
    if not missed:
        print(f'targets met for {", ".join(args.gate)}')
    return 1 if missed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
