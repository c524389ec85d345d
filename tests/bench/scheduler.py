"""Benchmark: nova's default filters and weighers, alone and with ours.

For 1000 (and up to 10,000) synthetic hosts with fresh reports, time one
scheduling pass (filter + weigh) of a plain and of a NUMA-policy request,
nova alone and nova plus our plugins, interleaved so drift hits both. Also
report ingest rate through the real cache on one core.

Run: python -m tests.bench scheduler [--hosts 1000] [--repeat 15]
"""

import argparse
import datetime
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
from placement_filters import cache as cache_mod
from placement_filters import listener
from tests.unit.scheduler import reports

CONF = cfg.CONF
NOVA_FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter']
OUR_FILTERS = ['NumaPolicyFilter', 'NumaNicLocalityFilter',
               'NumaNodeLoadFilter']
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


def _spec(extra_specs):
    flavor = objects.Flavor(vcpus=2, memory_mb=2048, root_gb=10,
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

    def __init__(self, filter_names, with_ours):
        filter_handler = nova_filters.HostFilterHandler()
        classes = filter_handler.get_matching_classes(
            ['nova.scheduler.filters.all_filters'] +
            (['placement_filters.all_filters'] if with_ours else []))
        by_name = {cls.__name__: cls for cls in classes}
        self.filters = [by_name[name]() for name in filter_names]
        weigher_classes = nova_weights.all_weighers() + (
            placement_filters.all_weighers() if with_ours else [])
        self.weighers = [cls() for cls in weigher_classes]
        self.filter_handler = filter_handler
        self.weight_handler = nova_weights.HostWeightHandler()

    def run(self, hosts, spec):
        passed = self.filter_handler.get_filtered_objects(
            self.filters, hosts, spec)
        weighed = self.weight_handler.get_weighed_objects(
            self.weighers, list(passed), spec)
        return weighed[0].obj if weighed else None


def _time(pipeline, hosts, spec):
    start = time.perf_counter()
    pipeline.run(hosts, spec)
    return time.perf_counter() - start


def compare(n_hosts, repeat):
    cache = cache_mod.ReportCache(max_hosts=max(n_hosts, 1), ttl=3600,
                                  max_report_bytes=1 << 20, io_rate=500)
    when = datetime.datetime.now(datetime.timezone.utc)
    for i in range(n_hosts):
        cache.ingest(_payload(i, when))
    listener.RUNTIME.install(cache)
    hosts = [_host_state(i) for i in range(n_hosts)]
    nova = Pipeline(NOVA_FILTERS, with_ours=False)
    ours = Pipeline(NOVA_FILTERS + OUR_FILTERS, with_ours=True)
    rows = {}
    for name, specs in REQUESTS.items():
        spec = _spec(specs)
        base, plus = [], []
        for _ in range(repeat):  # interleaved: drift hits both alike
            base.append(_time(nova, hosts, spec))
            plus.append(_time(ours, hosts, spec))
        ratios = [p / b for p, b in zip(plus, base)]
        rows[name] = (statistics.median(base), statistics.median(plus),
                      statistics.median(ratios))
    return rows


def ingest_rate(count=3000):
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


def main(argv=None):
    parser = argparse.ArgumentParser(prog='tests.bench scheduler')
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[1000, 3000, 10000])
    parser.add_argument('--repeat', type=int, default=11)
    args = parser.parse_args(argv)
    CONF([], project='nova')
    objects.register_all()
    nova_context.get_admin_context()
    print('hosts  request      nova ms   +ours ms  ratio  added us/host')
    for n_hosts in args.hosts:
        for name, (base, plus, ratio) in compare(
                n_hosts, args.repeat).items():
            print(f'{n_hosts:5d}  {name:11s} {base * 1e3:8.2f}  '
                  f'{plus * 1e3:8.2f}  {ratio:5.3f}  '
                  f'{(plus - base) / n_hosts * 1e6:6.2f}')
    rate, accepted = ingest_rate()
    print(f'ingest: {rate:,.0f} reports/s on one core '
          f'({accepted} accepted)')
    listener.RUNTIME.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
