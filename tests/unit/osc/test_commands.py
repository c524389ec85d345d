"""``openstack numa ...`` end to end against the in-process API."""

from nova_numa_policy.collector import actions
from tests.unit.collector import fakes
from tests.unit.osc import base

UUID_C = '33333333-3333-4333-8333-333333333333'


def fill(storage):
    """Three hosts; compute-2 runs an instance whose policy did not apply."""
    storage.store_report(fakes.make_report('compute-1'), fakes.at(100))
    storage.store_report(fakes.make_report(
        'compute-2', instances=[fakes.make_instance(
            fakes.UUID_B, requested='interleave', applied='first-touch')]),
        fakes.at(100))
    # nova shares half of node 0's CPUs and dedicates the rest; the
    # iopath loop steered its NIC's two vectors.
    # Its node 1 is a lower memory tier, and its kernel demotes to it.
    third = fakes.make_report('compute-3', instances=[
        fakes.make_instance(UUID_C, requested=None, applied='none',
                            memory={'0': 2048})],
        floating={0: ([0, 1, 2, 3], 0.6), 1: ([], None)},
        tiers={0: 0, 1: 1}, demotion=True)
    third.nics[0].irqs, third.nics[0].irq_cpus = [40, 41], [8, 9]
    third.nics[0].irq_steering = 'steered to node 1 (CPUs 8,9)'
    storage.store_report(third, fakes.at(100))
    for seq, host, uuid in ((1, 'compute-1', fakes.UUID_A),
                            (2, 'compute-2', fakes.UUID_B),
                            (3, 'compute-2', None)):
        storage.store_action(actions.load_action(fakes.make_action_payload(
            host=host, seq=seq, instance_uuid=uuid)), fakes.at(100))


class HostCommandsTest(base.CliTestCase):

    def setUp(self):
        super().setUp()
        fill(self.api.storage)

    def test_host_list_shows_every_host(self):
        hosts = self.json_cli('numa', 'host', 'list')
        self.assertEqual(['compute-1', 'compute-2', 'compute-3'],
                         [h['Host'] for h in hosts])
        self.assertEqual({2}, {h['NUMA Nodes'] for h in hosts})
        self.assertNotIn('Hypervisor Hostname', hosts[0])

    def test_host_list_long_adds_columns(self):
        host = self.json_cli('numa', 'host', 'list', '--long')[0]
        self.assertEqual('compute-1.example.org', host['Hypervisor Hostname'])
        self.assertEqual(['first-touch', 'interleave'],
                         host['Enforceable Policies'])

    def test_limit_and_marker_give_one_page(self):
        hosts = self.json_cli('numa', 'host', 'list', '--limit', '1',
                              '--marker', 'compute-1')
        self.assertEqual(['compute-2'], [h['Host'] for h in hosts])

    def test_host_show_has_node_load_memory_and_nic_locality(self):
        host = self.json_cli('numa', 'host', 'show', 'compute-1')
        self.assertEqual([0.25, 0.5],
                         [n['cpu_load'] for n in host['numa_nodes']])
        self.assertEqual([[], ['eth0']],
                         [n['nics'] for n in host['numa_nodes']])
        self.assertEqual([fakes.UUID_A], host['instances'])

    def test_host_show_table_describes_each_node_on_a_line(self):
        out = self.table_cli('numa', 'host', 'show', 'compute-1', '-c',
                             'numa_nodes')
        self.assertIn('| node 0: load 25 %, 30000/32768 MiB free, instances '
                      '512 MiB, no NIC |', out)
        self.assertIn('| node 1: load 50 %, 31000/32768 MiB free, instances '
                      '512 MiB, eth0   |', out)

    def test_host_show_says_what_unpinned_guests_may_use_where_not_all(self):
        out = self.table_cli('numa', 'host', 'show', 'compute-3', '-c',
                             'numa_nodes')
        self.assertIn('| node 0: load 25 % (unpinned guests: 4 of 8 CPUs at '
                      '60 %), 30000/32768 MiB free', out)
        self.assertIn('| node 1: load 50 % (no CPU for unpinned guests), '
                      '31000/32768 MiB free', out)
        host = self.json_cli('numa', 'host', 'show', 'compute-3')
        self.assertEqual([([0, 1, 2, 3], 0.6), ([], None)],
                         [(n['floating_cpus'], n['floating_load'])
                          for n in host['numa_nodes']])

    def test_host_show_says_each_nodes_memory_tier_where_said(self):
        out = self.table_cli('numa', 'host', 'show', 'compute-3', '-c',
                             'numa_nodes', '--max-width', '200')
        self.assertIn('30000/32768 MiB free (memory tier 0), instances',
                      out)
        self.assertIn('31000/32768 MiB free (memory tier 1), instances',
                      out)
        host = self.json_cli('numa', 'host', 'show', 'compute-3')
        self.assertEqual([0, 1], [n['memory_tier']
                                  for n in host['numa_nodes']])
        self.assertIs(True, host['memory_demotion'])
        # An agent that does not say: the line as before, nothing said.
        out = self.table_cli('numa', 'host', 'show', 'compute-1', '-c',
                             'numa_nodes')
        self.assertNotIn('tier', out)
        host = self.json_cli('numa', 'host', 'show', 'compute-1')
        self.assertIsNone(host['memory_demotion'])

    def test_host_show_says_where_a_nics_vectors_go_and_why(self):
        out = self.table_cli('numa', 'host', 'show', 'compute-3', '-c',
                             'nics', '--max-width', '200')
        self.assertIn('eth0 (node 1, 25000 Mb/s, physnet1); 2 interrupt '
                      'vector(s) on CPUs 8,9: steered to node 1 (CPUs 8,9)',
                      out)
        (nic,) = self.json_cli('numa', 'host', 'show', 'compute-3')['nics']
        self.assertEqual(([40, 41], [8, 9], 'steered to node 1 (CPUs 8,9)'),
                         (nic['irqs'], nic['irq_cpus'], nic['irq_steering']))
        # An agent that does not say: nothing more than before.
        out = self.table_cli('numa', 'host', 'show', 'compute-1', '-c',
                             'nics')
        self.assertIn('eth0 (node 1, 25000 Mb/s, physnet1) ', out)
        self.assertNotIn('vector', out)

    def test_unknown_host_prints_the_api_message(self):
        code, _out, err = self.run_cli('numa', 'host', 'show', 'nowhere')
        self.assertEqual(1, code)
        self.assertIn("numa-policy API error 404: no report from host "
                      "'nowhere'", err)

    def test_limit_above_the_api_maximum_is_the_api_error(self):
        code, _out, err = self.run_cli('numa', 'host', 'list', '--limit',
                                       '100000')
        self.assertEqual(1, code)
        self.assertIn('numa-policy API error 400: limit must be an '
                      'integer from 1 to 1000', err)


class PagingTest(base.CliTestCase):
    # One item per API page: without --limit the CLI must follow links.
    api_overrides = {'default_limit': 1}

    def setUp(self):
        super().setUp()
        fill(self.api.storage)

    def test_without_limit_every_page_is_read(self):
        hosts = self.json_cli('numa', 'host', 'list')
        self.assertEqual(['compute-1', 'compute-2', 'compute-3'],
                         [h['Host'] for h in hosts])
        actions_ = self.json_cli('numa', 'action', 'list')
        self.assertEqual(3, len(actions_))


class InstanceCommandsTest(base.CliTestCase):

    def setUp(self):
        super().setUp()
        fill(self.api.storage)

    def test_instance_list_shows_requested_and_applied_policy(self):
        rows = self.json_cli('numa', 'instance', 'list')
        self.assertEqual(
            [(fakes.UUID_A, 'interleave', 'interleave', True),
             (fakes.UUID_B, 'interleave', 'first-touch', False),
             (UUID_C, None, 'none', None)],
            [(r['UUID'], r['Requested Policy'], r['Applied Policy'],
              r['Policy Applied']) for r in rows])

    def test_instance_list_by_host(self):
        rows = self.json_cli('numa', 'instance', 'list', '--host',
                             'compute-3', '--long')
        self.assertEqual([UUID_C], [r['UUID'] for r in rows])
        self.assertEqual({'0': 2048}, rows[0]['Memory per Node'])
        self.assertEqual([0, 8], rows[0]['vCPU CPUs'])

    def test_memory_per_node_reads_as_mib_per_node(self):
        out = self.table_cli('numa', 'instance', 'show', fakes.UUID_A, '-c',
                             'memory_mb_per_node')
        self.assertIn('| node 0: 512 MiB, node 1: 512 MiB |', out)

    def test_instance_show(self):
        instance = self.json_cli('numa', 'instance', 'show', fakes.UUID_B)
        self.assertEqual(('compute-2', False),
                         (instance['host'], instance['policy_applied']))

    def test_a_bad_uuid_is_the_api_400(self):
        code, _out, err = self.run_cli('numa', 'instance', 'show',
                                       'not-a-uuid')
        self.assertEqual(1, code)
        self.assertIn("numa-policy API error 400: uuid must be a UUID, got "
                      "'not-a-uuid'", err)


class ActionCommandsTest(base.CliTestCase):

    def setUp(self):
        super().setUp()
        fill(self.api.storage)

    def test_actions_newest_first(self):
        rows = self.json_cli('numa', 'action', 'list')
        self.assertEqual([3, 2, 1], [r['ID'] for r in rows])
        self.assertEqual('move_pages', rows[0]['Kind'])

    def test_actions_by_host_and_instance(self):
        rows = self.json_cli('numa', 'action', 'list', '--host',
                             'compute-2', '--instance', fakes.UUID_B,
                             '--long')
        self.assertEqual([2], [r['ID'] for r in rows])
        self.assertEqual({'source_node': 0, 'target_node': 1,
                          'pages': 512}, rows[0]['Details'])

    def test_details_read_as_key_value_pairs(self):
        out = self.table_cli('numa', 'action', 'list', '--limit', '1',
                             '--long', '-c', 'Details')
        self.assertIn('| pages=512, source_node=0, target_node=1 |', out)

    def test_zero_limit_is_refused_before_calling_the_api(self):
        code, _out, err = self.run_cli('numa', 'action', 'list', '--limit',
                                       '0')
        self.assertEqual(1, code)
        self.assertIn('--limit must be at least 1', err)


class NonAdminTest(base.CliTestCase):
    roles = 'member,reader'

    def test_the_policy_refusal_is_shown(self):
        code, _out, err = self.run_cli('numa', 'host', 'list')
        self.assertEqual(1, code)
        self.assertIn('numa-policy API error 403: policy does not allow '
                      'numa_policy:hosts:list', err)
