"""tempest's compute suite against the cloud, ours and stock (pure).

What tests/cloud/test_tempest_suite.py runs and how it reads the two
runs: the tempest modules (:data:`MODULES`, narrowed by
``NUMA_CLOUD_TEMPEST_MODULES``), the compute features this cloud turns
on for them (:func:`features`), nova's stock scheduler and driver
(:func:`stock_scheduler_config`, :func:`stock_compute_config`), each
run's counts per tempest module (:func:`counts`), the tests one run
passed and the other did not (:func:`compare`), and the table of both
(:func:`report`).
"""

import collections
import dataclasses
import re

from tests.cloud import tempest_results as results

# tempest's compute API tests, as tempest ships them, that exercise what
# our filters, weighers and driver touch: every server test (boot,
# actions, moves, rescue, shelve, interfaces), and the admin modules of
# migrations, live migration, servers, flavors, hypervisors and
# aggregates. The aggregate tests are in tempest's serial_tests (they
# move computes between availability zones, so tempest runs them alone).
MODULES = (
    'tempest.api.compute.servers',
    'tempest.api.compute.admin.test_migrations',
    'tempest.api.compute.admin.test_live_migration',
    'tempest.api.compute.admin.test_live_migration_negative',
    'tempest.api.compute.admin.test_servers',
    'tempest.api.compute.admin.test_servers_negative',
    'tempest.api.compute.admin.test_servers_on_multinodes',
    'tempest.api.compute.admin.test_flavors',
    'tempest.api.compute.admin.test_flavors_access',
    'tempest.api.compute.admin.test_flavors_access_negative',
    'tempest.api.compute.admin.test_flavors_extra_specs',
    'tempest.api.compute.admin.test_flavors_extra_specs_negative',
    'tempest.api.compute.admin.test_flavors_microversions',
    'tempest.api.compute.admin.test_hypervisor',
    'tempest.api.compute.admin.test_hypervisor_negative',
    'tempest.api.compute.admin.test_aggregates_negative',
    'tempest.serial_tests.api.compute.admin.test_aggregates',
)
# Comma-separated dotted names: the run narrowed to those.
MODULES_ENV = 'NUMA_CLOUD_TEMPEST_MODULES'

# What two linked lab hosts with libvirt (TCG), neutron's flat network
# and glance do: each has a test module above that skips without it.
FEATURES_ON = (
    # To the other compute over the link, nova's SSH and scp between
    # them (tests/cloud/compute.py); allow_resize_to_same_host is off,
    # so a resize is a move too.
    'resize', 'cold_migration',
    # libvirt to libvirt over the link (live_migration_scheme tcp).
    'live_migration',
    # The computes share no storage: each guest's disk goes with it.
    'block_migration_for_live_migration',
    # libvirt's own: suspend is a managed save on the lab host's tmpfs.
    'pause', 'suspend',
    # Shelve is a snapshot to glance, unshelve a boot from it.
    'shelve', 'snapshot',
    # A rescue boots the guest from its image again.
    'rescue',
    # Ports of the shared flat network, bound by each compute's OVS agent.
    # tempest's tests of it also log in to the guest (run_validation),
    # which the tiny images cannot answer: they skip, and the cloud
    # tier's own test attaches a port (tests/cloud/test_servers.py).
    'interface_attach',
)
# Kept off, each for what this cloud lacks.
FEATURES_KEPT_OFF = {
    # No console proxy (no nova-novncproxy, spice or serial proxy).
    'vnc_console': 'no console proxy',
    'spice_console': 'no console proxy',
    'serial_console': 'no console proxy',
    # The tiny raw images boot no kernel: their console prints nothing,
    # which tempest's console tests wait for.
    'console_output': 'the tiny images print nothing on their console',
    # No cinder.
    'volume_backed_live_migration': 'no volume service',
    'attach_encrypted_volume': 'no volume service',
    'swap_volume': 'no volume service',
    'volume_multiattach': 'no volume service',
    # Its tests rescue from images with hw_rescue_* properties and
    # attach volumes to the rescued server.
    'stable_rescue': 'rescue images with hw_rescue_* and volumes',
    # A password is set by a guest agent; the images have none.
    'change_password': 'no guest agent in the images',
    # No route from physnet1's guests to a metadata service.
    'metadata_service': 'no route to a metadata service',
    # Read from inside the guest (no SSH into guests here); and no
    # genisoimage on this machine, whose root the lab hosts share.
    'config_drive': 'no genisoimage, no SSH into guests',
    # File injection: gone from nova's API at 2.57, and libvirt's
    # inject_partition is off by default.
    'personality': 'file injection, gone at microversion 2.57',
    # Unshelve to another host: read by tempest's scenario tests only.
    'shelve_migrate': 'read by none of the modules run',
}
# nova's defaults ([filter_scheduler] enabled_filters and
# weight_classes), equal to nova's own by a unit test: the stock
# scheduler's, and what devstack/plugin.sh appends ours to.
STOCK_FILTERS = ('ComputeFilter', 'ComputeCapabilitiesFilter',
                 'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                 'ServerGroupAffinityFilter')
STOCK_WEIGHERS = ('nova.scheduler.weights.all_weighers',)
# nova's libvirt driver, which ours (numa_policy.NumaPolicyLibvirtDriver)
# extends.
STOCK_DRIVER = 'libvirt.LibvirtDriver'
# A test id's method ends with tempest's ``[id-...,tags]``; a class that
# failed to set up is reported as ``setUpClass (module.Class)``.
_FIXTURE_ID = re.compile(r'^\w+ \((?P<name>[\w.]+)\)$')
OURS, STOCK = 'ours', 'stock'


def selection(value=None):
    """The modules to run: :data:`MODULES`, or those ``value`` names.

    ``value``: comma-separated dotted names (the environment's
    :data:`MODULES_ENV`), any tempest module or package; empty or None
    is the whole list.
    """
    names = tuple(n.strip() for n in (value or '').split(',') if n.strip())
    for name in names:
        if not re.fullmatch(r'[A-Za-z_]\w*(\.[A-Za-z_]\w*)*', name):
            raise ValueError(f'{MODULES_ENV}: not a dotted name: {name!r}')
    return names or MODULES


def test_regex(modules):
    """``tempest run``'s regex for every test under ``modules``.

    A module is matched up to its dot, so ``admin.test_servers`` does not
    select ``admin.test_servers_negative`` too.
    """
    return '|'.join(f'^{re.escape(m)}\\.' for m in modules)


def features(enabled_filters):
    """tempest.conf's ``[compute-feature-enabled]`` for this run.

    :data:`FEATURES_ON` True, :data:`FEATURES_KEPT_OFF` False, and the
    scheduler's ``enabled_filters``, so that tempest skips a test that
    needs a filter the scheduler runs without.
    """
    options = {name: 'False' for name in FEATURES_KEPT_OFF}
    options.update({name: 'True' for name in FEATURES_ON})
    options['scheduler_enabled_filters'] = ','.join(enabled_filters)
    return options


def stock_scheduler_config():
    """nova-scheduler's extra file for stock: nova's filters, weighers."""
    return {'filter_scheduler': {
        'enabled_filters': ','.join(STOCK_FILTERS),
        'weight_classes': ','.join(STOCK_WEIGHERS)}}


def stock_compute_config():
    """nova-compute's extra file for stock: nova's libvirt driver."""
    return {'DEFAULT': {'compute_driver': STOCK_DRIVER}}


# -- reading the runs ---------------------------------------------------

def module_of(test_id):
    """The tempest module a test id is in.

    ``pkg.module.Class.test[id-...]`` is in ``pkg.module``;
    ``setUpClass (pkg.module.Class)`` too. The module is what precedes
    the first capitalised name (the class).
    """
    test_id = test_id.split('[', 1)[0]
    fixture = _FIXTURE_ID.match(test_id)
    if fixture:
        test_id = fixture.group('name')
    parts = test_id.split('.')
    for index, part in enumerate(parts):
        if part[:1].isupper():
            return '.'.join(parts[:index])
    return '.'.join(parts[:-1])


def outcome(result):
    """'passed', 'failed', 'skipped' or 'unfinished' (tempest_results)."""
    if result.status in results.PASSED:
        return 'passed'
    if result.status in results.FAILED:
        return 'failed'
    if result.status in results.SKIPPED:
        return 'skipped'
    return 'unfinished'


@dataclasses.dataclass
class Counts:
    """One run's tests of one module, by outcome."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    unfinished: int = 0

    @property
    def total(self):
        return self.passed + self.failed + self.skipped + self.unfinished

    def add(self, other):
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name)
                    + getattr(other, field.name))

    def text(self):
        """``passed/failed/skipped`` and, if any, ``+N unfinished``."""
        text = f'{self.passed}/{self.failed}/{self.skipped}'
        return text + (f' +{self.unfinished} unfinished'
                       if self.unfinished else '')


def counts(run):
    """{module: Counts} of a run's results, by :func:`module_of`."""
    found = collections.defaultdict(Counts)
    for result in run:
        counted = found[module_of(result.test_id)]
        name = outcome(result)
        setattr(counted, name, getattr(counted, name) + 1)
    return dict(found)


@dataclasses.dataclass(frozen=True)
class Difference:
    """A test one run passed and the other did not."""

    test_id: str
    passed_in: str        # OURS or STOCK
    other_outcome: str    # 'failed', 'skipped', 'unfinished', 'not run'
    reason: str           # the other run's reason (its traceback's end)


def _by_id(run):
    return {result.test_id: result for result in run}


def _passed_only_in(passing, other, passed_in):
    differences = []
    for test_id, result in passing.items():
        if outcome(result) != 'passed':
            continue
        theirs = other.get(test_id)
        if theirs is None:
            differences.append(Difference(test_id, passed_in, 'not run', ''))
        elif outcome(theirs) != 'passed':
            differences.append(Difference(test_id, passed_in,
                                          outcome(theirs), theirs.reason))
    return sorted(differences, key=lambda d: d.test_id)


def compare(ours, stock):
    """(ours to fix, stock's own): tests passed by one run only.

    The first: passed stock and did not pass with ours (failed, skipped,
    unfinished or not run), each with ours' reason; every one of them is
    ours to fix. The second: passed with ours and not stock.
    """
    ours, stock = _by_id(ours), _by_id(stock)
    return (_passed_only_in(stock, ours, STOCK),
            _passed_only_in(ours, stock, OURS))


# -- the report ---------------------------------------------------------

def rst_table(header, rows):
    """An rst simple table (also plain text) of ``header`` and ``rows``."""
    widths = [max(len(str(cell)) for cell in column)
              for column in zip(header, *rows)]
    rule = '  '.join('=' * width for width in widths)

    def line(cells):
        return '  '.join(str(cell).ljust(width)
                         for cell, width in zip(cells, widths)).rstrip()

    return '\n'.join([rule, line(header), rule, *map(line, rows), rule])


def table(ours, stock):
    """Both runs' counts per module, and their totals, as a table.

    ``ours``, ``stock``: {module: Counts}. A module one run has and the
    other does not shows 0/0/0 there.
    """
    rows = []
    totals = {OURS: Counts(), STOCK: Counts()}
    for module in sorted(set(ours) | set(stock)):
        mine, theirs = ours.get(module, Counts()), stock.get(module, Counts())
        totals[OURS].add(mine)
        totals[STOCK].add(theirs)
        rows.append((module, mine.text(), theirs.text()))
    rows.append(('total', totals[OURS].text(), totals[STOCK].text()))
    return rst_table(('tempest module', 'ours p/f/s', 'stock p/f/s'), rows)


def _difference_lines(title, differences, reason_lines=3):
    lines = [f'{title}: {len(differences)}']
    for difference in differences:
        lines.append(f'  {difference.test_id} ({difference.other_outcome})')
        reason = difference.reason.splitlines()[-reason_lines:]
        lines.extend(f'      {line}' for line in reason)
    return lines


def report(modules, ours, stock, seconds=None):
    """The comparison's text: what ran, the table, the differences.

    ``ours``, ``stock``: each run's results; ``seconds``: {what: wall
    time}, printed as given (the runs, the switches).
    """
    to_fix, stock_fails = compare(ours, stock)
    lines = ['tempest compute suite, ours and stock',
             'selected: ' + ', '.join(modules), '',
             table(counts(ours), counts(stock)),
             '(p/f/s: passed/failed/skipped)', '']
    if seconds:
        lines += [f'{what}: {value:.0f} s' for what, value in
                  seconds.items()] + ['']
    lines += _difference_lines(
        'did not pass with ours, passed stock (ours to fix)', to_fix)
    lines += _difference_lines('passed with ours, did not pass stock',
                               stock_fails)
    return '\n'.join(lines)
