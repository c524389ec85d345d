"""A plan that fails half way, on a real host: all of it, or none of it.

A plan pins the guest's vCPUs and emulator to node 1 and binds its
memory there; the failure strikes after the first step. Afterwards the
kernel must show the guest as it was before the plan, or as the plan
intended, never in between; and the agent goes on.
"""

from nova_numa_policy.contracts import policy
from tests.host import base
from tests.labhost import deploy
from tests.labhost import domains


class MidPlanFaultTest(base.LabTestCase):

    def start(self, nodeset='0-1'):
        specs = {policy.POLICY_KEY: 'first-touch'}
        guest = domains.kept_by_the_driver(
            domains.nova_guest('instance-plan', 1, 128, specs), specs,
            self.TOPOLOGY.node_cpus(0))
        xml = guest.to_xml().replace(
            '</vcpu>', "</vcpu><numatune><memory mode='restrictive' "
                       f"nodeset='{nodeset}'/></numatune>")
        return self.start_guest({}, xml=xml)

    def state(self, guest):
        """What the kernel says of the guest's placement."""
        view = self.view(guest)
        return (tuple(view.vcpu_cpus()),
                frozenset(t.cpus_allowed for t in view.emulator_threads()),
                frozenset(v for v in view.cpuset_mems.values() if v))

    def plan(self, guest, actions, fault, periods_after=1):
        # No policy to enforce on the guest and no loop: what the agent
        # does in its periods is the plan's end only.
        deploy.write_config(self.lab, self.agent_config(
            page_migration=True) + base.PRIVILEGED)
        result = self.lab.call('tests.labhost.inside:plan_with_fault',
                               deploy.CONFIG_FILES, guest.uuid, actions,
                               fault, periods_after=periods_after,
                               timeout=600)
        self.addDetail('agent-log', base.text(result['log']))
        return result

    def home_on_node1(self):
        node1 = sorted(self.node_cpus(1))
        return [('PinVcpu', {'vcpu': 0, 'cpus': node1}),
                ('PinEmulator', {'cpus': node1}),
                ('SetNodeset', {'nodes': [1]})]

    def assert_before_or_after(self, guest, before, intended):
        now = self.state(guest)
        self.assertIn(now, (before, intended),
                      f'in between: before {before}, now {now}')
        return now

    def intended(self):
        cpus = self.node_cpus(1)
        return ((cpus,), frozenset({cpus}), frozenset({'1'}))

    def test_without_a_fault_the_plan_is_carried_out(self):
        guest = self.start()
        result = self.plan(guest, self.home_on_node1(), 'none')
        self.assertEqual('applied', result['ending'])
        self.assertEqual(self.intended(), self.state(guest))

    def test_a_refusal_by_the_kernel_rolls_back(self):
        # cpuset.mems is node 0: the kernel refuses to move pages to
        # node 1 (EACCES), after the vCPU was pinned there.
        guest = self.start(nodeset='0')
        before = self.state(guest)
        result = self.plan(guest, [
            ('PinVcpu', {'vcpu': 0, 'cpus': sorted(self.node_cpus(1))}),
            ('MovePages', {'source_node': 0, 'target_node': 1,
                           'pages': 4096})], 'none')
        self.assertEqual('rolled back', result['ending'])
        self.assertEqual(before, self.state(guest))
        self.assertEqual({0}, {n for n, p in
                               self.view(guest).ram.pages.items() if p})

    def test_libvirtd_restarted_mid_plan_ends_before_or_after(self):
        # libvirtd is back before the second step: the agent reconnects
        # and goes on, or fails the step and rolls back; never between.
        guest = self.start()
        before = self.state(guest)
        result = self.plan(guest, self.home_on_node1(), 'libvirtd-restarted')
        self.assertIn(result['ending'], ('applied', 'rolled back'))
        self.assertEqual(0, result['pending'])
        self.assert_before_or_after(guest, before, self.intended())

    def test_libvirtd_away_mid_plan_is_undone_in_the_next_period(self):
        guest = self.start()
        before = self.state(guest)
        result = self.plan(guest, self.home_on_node1(), 'libvirtd-stopped')
        self.assertEqual('undo pending', result['ending'])
        self.assertEqual(1, result['pending'])
        # libvirtd came back; the agent's next period finished the undo.
        self.assertEqual(['rolled back'], result['after'])
        self.assertEqual(before, self.state(guest))

    def test_the_domain_destroyed_mid_plan_leaves_the_agent_running(self):
        guest = self.start()
        result = self.plan(guest, self.home_on_node1(), 'domain-destroyed',
                           periods_after=2)
        self.assertEqual('gone', result['ending'])
        self.assertNotIn('Traceback', result['log'])
        self.assertIn('went away during enforcement', result['log'])
        self.assertNotIn(guest.name, self.lab.run(
            'virsh -c qemu:///system list --name').stdout)
