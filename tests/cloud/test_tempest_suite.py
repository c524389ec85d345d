"""tempest's compute suite as shipped, with our plugins and without.

``tox -e cloud-tempest`` (not in tox's default list: hours under
emulation). In the cloud tier's shared cloud (tests/cloud/cloud.py),
with every compute feature the cloud can do turned on in tempest.conf
(tests/cloud/tempest_suite.py: resize, cold and live migration, the
latter a block migration, pause, suspend, shelve, snapshot, rescue,
interface attach), tempest runs, unmodified:

1. the selected modules with ours: our filters and weighers in
   nova-scheduler, our driver in each nova-compute, our agents;
2. the cloud switched to stock nova: nova-scheduler restarted with
   nova's default ``enabled_filters`` and ``weight_classes`` (a file of
   its own read after nova.conf), each compute's nova-compute restarted
   with ``compute_driver = libvirt.LibvirtDriver`` the same way (our
   agents stay: they place nothing nova does not ask for);
3. the same modules again, stock; then the cloud is switched back to
   ours, for the tests after this one.

The selection is ``tempest_suite.MODULES`` (tempest's server tests and
the admin modules of migrations, live migration, servers, flavors,
hypervisors and aggregates); the environment's
``NUMA_CLOUD_TEMPEST_MODULES``, comma-separated dotted names, narrows
it (``tempest.api.compute.admin.test_migrations``, say).

Both runs' counts per tempest module and the tests one run passed and
the other did not are written to ``.artifacts/cloud/tempest-compare.txt``
and kept as the test's detail. The test fails if a test passed stock and
did not pass with ours: those are ours to fix, named with ours' reason.
A test failing both ways is the cloud's, not ours, and is only counted.
"""

import argparse
import os
import re
import time

from testtools import content

from tests import base as test_base
from tests.cloud import cloud as cloud_mod
from tests.cloud import layout as lay
from tests.cloud import resources
from tests.cloud import tempest_results
from tests.cloud import tempest_run
from tests.cloud import tempest_suite
from tests.cloud import tempestconf

COMPARISON = os.path.join(lay.ARTIFACTS, 'tempest-compare.txt')
# Each boot is a TCG guest in a TCG lab host; a move copies its disk
# between them over the link.
BUILD_TIMEOUT = 600
# A worker per test class, two at a time: the classes boot servers
# from setUpClass on, and each compute's state disk (4 GB) holds a few
# 1 GB flavors, with room to keep for a guest moving in; two workers,
# one a core of this machine, as test_tempest.py's boots are spread.
CONCURRENCY = 2
# nova-compute's start under emulation (imports alone take about a
# minute), up to its first report of its resources.
COMPUTE_START_TIMEOUT = 900
# Logged by nova-compute once it has reported its resources: ready.
COMPUTE_READY = r'Final resource view'
OUR_DRIVER = 'numa_policy.NumaPolicyLibvirtDriver'
CLOUD = None


def setUpModule():
    global CLOUD
    CLOUD = cloud_mod.for_test_module()


class TempestSuiteTest(test_base.TestCase):
    """tempest's compute modules with ours, then stock, compared."""

    def setUp(self):
        super().setUp()
        self.modules = tempest_suite.selection(
            os.environ.get(tempest_suite.MODULES_ENV))
        self.regex = tempest_suite.test_regex(self.modules)
        self.mode = tempest_suite.OURS
        self.seconds = {}

    # -- switching the cloud --------------------------------------------

    def timed(self, what, function, *args):
        began = time.monotonic()
        try:
            return function(*args)
        finally:
            self.seconds[what] = time.monotonic() - began
            print(f'tempest suite: {what}: {self.seconds[what]:.0f} s',
                  flush=True)

    def switch(self, mode):
        """The scheduler and every nova-compute restarted as ``mode``.

        Stock: each with nova's own settings in a file of its own read
        last; ours: as the cloud started them (their files alone).
        """
        stock = mode == tempest_suite.STOCK
        if stock:
            # Partly stock from here on: the cleanup switches back.
            self.mode = mode
        CLOUD.control.restart_service(
            'nova-scheduler',
            tempest_suite.stock_scheduler_config() if stock else None)
        self.check_scheduler(stock)
        extra = tempest_suite.stock_compute_config() if stock else None
        # Every compute restarted before any is waited for: their
        # starts, a few minutes each under emulation, overlap.
        since = {name: self.restart_compute(name, extra)
                 for name in CLOUD.computes}
        for name, offset in since.items():
            self.wait_compute_ready(name, offset, extra)
        self.mode = mode

    def back_to_ours(self):
        """A cleanup: the cloud as it was, for the tests after this one."""
        if self.mode != tempest_suite.OURS:
            self.timed('switch back to ours', self.switch,
                       tempest_suite.OURS)

    def check_scheduler(self, stock):
        """What nova-scheduler logged of its filters: ours or none of ours.

        nova logs its options at DEBUG as it starts: what it runs with.
        """
        found = resources.wait_for(
            lambda: re.findall(
                r'filter_scheduler\.enabled_filters = (\[.*?\])',
                CLOUD.control.service_log('nova-scheduler')),
            bool, "enabled_filters in nova-scheduler's log", 60, interval=1)
        self.assertEqual(stock, 'NumaPolicyFilter' not in found[-1],
                         found[-1])

    def restart_compute(self, name, extra_config):
        """``name``'s nova-compute stopped and started again.

        Returns its log's size before: what it logs later is the new
        process's.
        """
        compute = CLOUD.computes[name]
        since = compute.log_size()
        compute.stop()
        compute.start(extra_config)
        return since

    def wait_compute_ready(self, name, since, extra_config):
        """Wait until ``name``'s new nova-compute is ready and up in nova.

        Ready: it has reported its resources, with the driver it was
        asked for (nova-compute logs its options at DEBUG as it starts).
        """
        compute = CLOUD.computes[name]
        compute.wait_for_log(COMPUTE_READY, COMPUTE_START_TIMEOUT, since)
        driver = (tempest_suite.STOCK_DRIVER if extra_config else
                  OUR_DRIVER)
        compute.wait_for_log(rf'compute_driver\s+=\s+{re.escape(driver)}',
                             60, since)
        nova = CLOUD.nova()
        resources.wait_for(
            lambda: {s['host']: s for s in nova.compute_services()}[name],
            lambda s: s['state'] == 'up' and s['status'] == 'enabled',
            f'nova-compute of {name} up', COMPUTE_START_TIMEOUT, interval=3)

    # -- running tempest -------------------------------------------------

    def run_suite(self, mode):
        """The selected modules with the cloud as ``mode``: the results.

        A workspace per mode (both runs' logs kept), its tempest.conf
        with the features on and the scheduler's filters of that mode.
        """
        workspace = tempestconf.Workspace(os.path.join(
            CLOUD.workdir, f'tempest-suite-{mode}'))
        filters = (tempest_suite.STOCK_FILTERS
                   if mode == tempest_suite.STOCK else
                   tempest_run.nova_filters(CLOUD.control.layout))
        args = argparse.Namespace(
            min_compute_nodes=len(CLOUD.computes),
            build_timeout=BUILD_TIMEOUT, driver_extension='True')
        tempest_run.prepare(CLOUD.control.layout, workspace, args,
                            CLOUD.tempest_ssh_settings(),
                            tempest_suite.features(filters))
        with open(workspace.conf) as f:
            self.addDetail(f'tempest.conf-{mode}',
                           content.text_content(f.read()))
        returncode, output, run = self.timed(
            f'tempest with {mode}', tempest_run.run_parsed, workspace,
            self.regex, CONCURRENCY)
        closing = '\n'.join(tempest_results.closing_lines(output))
        self.addDetail(f'tempest-{mode}', content.text_content(
            f'exit {returncode}\n{closing}\n\n'
            + '\n'.join(tempest_results.report(run))))
        return run

    def test_what_passes_stock_passes_with_ours(self):
        ours = self.run_suite(tempest_suite.OURS)
        self.addCleanup(self.back_to_ours)
        self.timed('switch to stock', self.switch, tempest_suite.STOCK)
        stock = self.run_suite(tempest_suite.STOCK)
        # Written before the switch back (the cleanup's): a run stopped
        # there still leaves both runs' counts.
        text = tempest_suite.report(self.modules, ours, stock, self.seconds)
        os.makedirs(lay.ARTIFACTS, exist_ok=True)
        with open(COMPARISON, 'w') as f:
            f.write(text + '\n')
        print(text, flush=True)
        self.addDetail('tempest-compare', content.text_content(text))
        to_fix, _ = tempest_suite.compare(ours, stock)
        self.assertTrue(ours, 'no test ran with ours')
        self.assertTrue(stock, 'no test ran stock')
        self.assertEqual([], [f'{d.test_id} ({d.other_outcome})'
                              for d in to_fix],
                         'passed stock, did not pass with ours')
