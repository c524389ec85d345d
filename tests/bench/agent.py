"""One agent period with 100 domains: CPU time and RSS.

Runs on libvirt's test driver (a generated host file with 100 running
domains, a third with a policy) and a fixture sysfs tree; prints the CPU
time of a steady-state period (after a first one that applied the
policies and filled the parse cache) and the process's peak RSS.
Target: <= 17.5 ms CPU per period (0.35 % of a core at a 5 s period),
RSS <= 80 MB.
"""

import argparse
import os
import resource
import shutil
import tempfile
import time
import uuid

from nova_numa_policy.contracts import policy
from nova_numa_policy.virt import metadata

from agent.backend import connection
from agent.backend import libvirt_backend
from agent.sensors import discovery
from agent.service import manager
from tests import fixtures as host_fixtures

CPU_BUDGET_MS = 17.5
RSS_BUDGET_MB = 80


def _domains(count):
    home = metadata.render(metadata.PolicyRecord(
        policy.resolve({policy.POLICY_KEY: 'home'})))
    result = []
    for index in range(count):
        kind = index % 3
        result.append(host_fixtures.domain_xml(
            index, str(uuid.UUID(int=index + 1, version=4)),
            policy=home if kind == 0 else None,
            nova_specs={policy.POLICY_KEY: 'interleave'} if kind == 1
            else None, memory_mb=256))
    return result


def measure(domains, periods):
    tmp = tempfile.mkdtemp(prefix='numa-agent-bench-')
    try:
        root = host_fixtures.two_sockets_nic_on_node1(
            os.path.join(tmp, 'root'))
        uri = 'test://' + host_fixtures.write_host_xml(
            os.path.join(tmp, 'host.xml'), _domains(domains))
        conn = connection.Connection(uri)
        agent = manager.Agent(
            libvirt_backend.LibvirtBackend(
                conn, root=root,
                uplinks=discovery.Uplinks({'physnet1': 'ens2f0'})),
            host='bench', period=5.0, max_actions=10_000)
        agent.run_once()  # applies the policies, fills the caches
        cpu = []
        for _ in range(periods):
            start = time.process_time()
            agent.run_once()
            cpu.append((time.process_time() - start) * 1000)
        conn.close()
        return sorted(cpu)[len(cpu) // 2], len(agent.last_report.instances)
    finally:
        shutil.rmtree(tmp)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='bench agent')
    parser.add_argument('--domains', type=int, default=100)
    parser.add_argument('--periods', type=int, default=20)
    args = parser.parse_args(argv)
    cpu_ms, instances = measure(args.domains, args.periods)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f'agent period: {instances} domains, median CPU {cpu_ms:.1f} ms '
          f'(budget {CPU_BUDGET_MS} ms, {cpu_ms / 50:.2f} % of a core at a '
          f'5 s period), peak RSS {rss_mb:.0f} MB (budget {RSS_BUDGET_MB})')
    return 0 if cpu_ms <= CPU_BUDGET_MS and rss_mb <= RSS_BUDGET_MB else 1


if __name__ == '__main__':
    raise SystemExit(main())
