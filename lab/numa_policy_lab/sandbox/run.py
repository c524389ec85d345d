"""The sandbox: every service started as a fixture, then the script.

Cleanup is the fixtures' own: each service registers how it stops as it
starts, so an interrupt or a failure at any point stops what was started
and nothing else, in reverse order (agents, nova, API, collector, queues,
temporary files).
"""

import os
import time
import types

import fixtures
import kombu

from nova_numa_policy.scheduling import explain
from numa_policy_lab.sandbox import hosts
from numa_policy_lab.sandbox import messaging
from numa_policy_lab.sandbox import nova
from numa_policy_lab.sandbox import services
from numa_policy_lab.sandbox import summary as summary_mod
from placement_filters import base as plugin_base
from placement_filters import listener

# Set to a step name to raise there (tests of the cleanup on failure).
FAIL_AT_ENV = 'NUMA_POLICY_SANDBOX_FAIL_AT'
WAIT_S = 30.0


class InjectedFailure(Exception):
    pass


def fail_point(name):
    if os.environ.get(FAIL_AT_ENV) == name:
        raise InjectedFailure(f'failure injected at {name!r} '
                              f'({FAIL_AT_ENV})')


def wait_for(predicate, what, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            what = what() if callable(what) else what
            raise messaging.SandboxError(f'timed out after {timeout:.0f}s '
                                         f'waiting for {what}')
        time.sleep(0.05)


def queue_exists(url, name):
    url = url.replace('rabbit://', 'amqp://', 1)
    with kombu.Connection(url, connect_timeout=5) as connection:
        channel = connection.channel()
        try:
            channel.queue_declare(queue=name, passive=True)
            return True
        except Exception:
            return False
        finally:
            try:
                channel.close()
            except Exception:  # noqa: S110 - closed by the broker already
                pass


class Sandbox(fixtures.Fixture):
    """Broker check, collector, API, nova, one rig per compute."""

    def __init__(self, plan, transport_url, progress, api_port=0, seed=0):
        super().__init__()
        self.plan = plan
        self.url = transport_url
        self.progress = progress
        self._api_port = api_port
        self._seed = seed

    def _setUp(self):
        messaging.check_broker(self.url)
        tmp = self.useFixture(fixtures.TempDir()).path
        topic = messaging.unique('numa_policy_sandbox')
        pool = messaging.unique('numa_policy_sandbox_collector')
        self.queues = self.useFixture(messaging.RunQueues(self.url, topic))
        self.queues.add(pool)
        self.conf = messaging.make_conf(
            self.url, topic, pool, f'sqlite:///{tmp}/collector.sqlite')
        self.collector = self.useFixture(services.Collector(self.conf))
        self.api = self.useFixture(services.ApiServer(self.conf,
                                                      self._api_port))
        self.progress(f'collector on RabbitMQ topic {topic}, SQLite in '
                      f'{tmp}; API listening on {self.api.url}')
        fail_point('api-started')
        self.progress('starting nova (API, conductor, scheduler with the '
                      'NUMA filters and weighers, placement)')
        self.nova = self.useFixture(nova.NovaCloud(nova.NovaSettings(
            self.url, topic, messaging.unique('numa_policy_sandbox_sched'))))
        self._start_scheduler_listener()
        self.rigs = {}
        for k, spec in enumerate(self.plan.computes):
            self.nova.start_compute(spec.name, spec.nodes,
                                    spec.cores_per_node, spec.memory_mb)
            self.rigs[spec.name] = self.useFixture(hosts.ComputeRig(
                spec, self.nova.nodename(spec.name), self.conf,
                self._seed + k))
            self.progress(f'{spec.name}: {spec.nodes} NUMA nodes x '
                          f'{spec.cores_per_node} CPUs, NIC on node '
                          f'{spec.nic_node}; agent on a simulated host')

    def _start_scheduler_listener(self):
        self.cache = self.nova.scheduler_cache()
        pool = listener.RUNTIME.listener.pool
        self.queues.add(pool)
        # The listener connects in the background; a report sent before
        # its queue exists would never reach the scheduler.
        wait_for(lambda: queue_exists(self.url, pool),
                 'the scheduler to listen for reports')


class Script:
    """Boot the plan's servers, run the periods, gather the summary."""

    def __init__(self, sandbox):
        self.sb = sandbox
        self.boots = []
        self.series = {}

    def run(self):
        self.report_all()
        flavor_ids = {f.name: self.sb.nova.create_flavor(
            f.name, f.vcpus, f.memory_mb, f.extra_specs)
            for f in self.sb.plan.flavors}
        total = len(self.sb.plan.servers)
        for i, (name, flavor_name) in enumerate(self.sb.plan.servers, 1):
            self.boot(i, total, name, self.sb.plan.flavor(flavor_name),
                      flavor_ids[flavor_name])
            fail_point('booted')
        self.run_periods()
        self.wait_collector()
        self.sb.progress('the collector has every report and action')
        return self.summary()

    # -- reports -----------------------------------------------------------
    def report_all(self):
        for rig in self.sb.rigs.values():
            rig.report_now()
        for name in self.sb.rigs:
            self.wait_report(name)
        self.wait_collector()
        self.sb.progress('every agent has reported; the scheduler cache '
                         'and the collector have every host')

    def wait_report(self, name):
        rig = self.sb.rigs[name]
        key = (name, rig.host.hostname())

        def arrived():
            cached = self.sb.cache.get(key)
            return cached is not None and cached.seq >= rig.agent.seq
        wait_for(arrived, f"{name}'s report in the scheduler cache")

    # -- boots -------------------------------------------------------------
    def boot(self, i, total, name, flavor, flavor_id):
        view = explain.explain(
            types.SimpleNamespace(extra_specs=dict(flavor.extra_specs),
                                  vcpus=flavor.vcpus,
                                  memory_mb=flavor.memory_mb),
            self.sb.cache.snapshot(), plugin_base.settings(), time.time())
        server = self.sb.nova.boot(name, flavor_id)
        host = server.get('OS-EXT-SRV-ATTR:host')
        record = {'name': name, 'uuid': server['id'], 'flavor': flavor.name,
                  'extra_specs': dict(flavor.extra_specs),
                  'profile': flavor.profile, 'status': server['status'],
                  'host': host,
                  'hosts': summary_mod.explanation_record(view)}
        self.boots.append(record)
        if host in self.sb.rigs:
            self.sb.rigs[host].add_guest(server['id'], flavor)
            self.sb.rigs[host].report_now()
            # The next boot's scheduling must see this guest's load.
            self.wait_report(host)
        self.sb.progress(
            f'[{i}/{total}] {name} ({flavor.name}, '
            f'{flavor.policy or "no policy"}, {flavor.profile}) -> '
            f'{host}: {summary_mod.why(host, record["hosts"])}')

    # -- periods -----------------------------------------------------------
    def run_periods(self):
        periods = self.sb.plan.periods
        for p in range(1, periods + 1):
            for rig in self.sb.rigs.values():
                for uuid, tp in rig.period().items():
                    self.series.setdefault(uuid, []).append(tp)
            sent = sum(r.actions_sent for r in self.sb.rigs.values())
            mean = sum(s[-1] for s in self.series.values()) / max(
                1, len(self.series))
            self.sb.progress(f'period {p}/{periods}: {sent} agent '
                             f'actions so far, mean throughput {mean:.3f}')
            fail_point('period')
            time.sleep(self.sb.plan.pause_s)

    def wait_collector(self):
        sent = sum(r.actions_sent for r in self.sb.rigs.values())
        counters = self.sb.collector.counters

        def stored():
            done = counters['actions_stored'] + counters[
                'actions_duplicate'] >= sent
            hosts_ = {h['host']: h['seq'] for h in self.sb.api.get_all(
                '/v1/hosts', 'hosts')}
            return done and all(hosts_.get(n, -1) >= r.agent.seq
                                for n, r in self.sb.rigs.items())
        wait_for(stored, lambda: (
            f'the collector to store every report and action ({sent} '
            f'actions sent; collector counters {dict(counters)}; last '
            f'report seq sent ' + ', '.join(
                f'{n} {r.agent.seq}' for n, r in self.sb.rigs.items())
            + ')'))

    # -- summary -----------------------------------------------------------
    def summary(self):
        api = self.sb.api
        instances = {i['uuid']: i for i in api.get_all(
            '/v1/instances?limit=1000', 'instances')}
        api_actions = api.get_all('/v1/actions?limit=1000', 'actions')
        hosts_ = {h['host']: h for h in api.get_all('/v1/hosts', 'hosts')}
        servers = []
        observed = {name: rig.observed() for name, rig in self.sb.rigs.items()}
        for boot in self.boots:
            rig = self.sb.rigs.get(boot['host'])
            measured = None
            if rig is not None:
                measured = summary_mod.measurement(
                    observed[boot['host']].get(boot['uuid']),
                    rig.host.topology())
            servers.append(summary_mod.server_record(
                boot, instances.get(boot['uuid']),
                self.series.get(boot['uuid'], []),
                rig.actions_by_vm.get(boot['uuid'], {}) if rig else {},
                rig.auto_choices().get(boot['uuid']) if rig else None,
                measured))
        ok, problems = summary_mod.verdict(servers)
        return {
            'ok': ok, 'problems': problems,
            'mode': 'smoke' if self.sb.plan.periods < 10 else 'full',
            'periods': self.sb.plan.periods,
            'api_url': self.sb.api.url,
            'loops': {'names': sorted({
                          name for rig in self.sb.rigs.values()
                          for name in rig.loop_names()}),
                      'run_by': 'agent ([numa_policy_loops])'},
            'computes': [self._compute(spec, hosts_)
                         for spec in self.sb.plan.computes],
            'servers': servers,
            'actions': summary_mod.action_totals(api_actions),
            'throughput': {
                'before_mean': summary_mod.mean_throughput(servers,
                                                           'before'),
                'after_mean': summary_mod.mean_throughput(servers, 'after')},
            'messages': {
                'scheduler_cache_accepted': self.sb.cache.accepted,
                'scheduler_cache_dropped': dict(self.sb.cache.dropped),
                'collector': dict(self.sb.collector.counters)},
        }

    def _compute(self, spec, api_hosts):
        rig = self.sb.rigs[spec.name]
        return {'name': spec.name, 'nodes': spec.nodes,
                'cores_per_node': spec.cores_per_node,
                'memory_mb': spec.memory_mb, 'nic_node': spec.nic_node,
                'signal': spec.signal,
                'reports_sent': rig.sender.sent,
                'last_report_seq': (api_hosts.get(spec.name) or {}).get(
                    'seq', 0)}
