"""What running nova's modules as shipped relies on, checked on its own.

* eventlet patched ``threading`` before oslo.db was imported, as nova's
  own test packages do first thing. Otherwise oslo.db's per-thread
  transaction state is per *process*: every greenthread using a request
  context joins the transaction another one has open on it, and a write
  made there (nova's network info cache, a PCI claim) is lost with that
  transaction. nova's move operations then fail at random, more often
  the more greenthreads run (our report listener is one).
* our plugins are in nova's configuration for each test, whatever nova's
  configuration fixture reset after the test before it, and gone after.
"""

import unittest

from oslo_config import cfg
from oslo_db.sqlalchemy import enginefacade

from nova import monkey_patch
from nova.tests.fixtures import conf as nova_conf_fixture

from tests import base as test_base
from tests.functional.nova import shipped

CONF = cfg.CONF

PATCHED_TOO_LATE = (
    "oslo.db was imported before eventlet patched threading, so every "
    "greenthread shares a request context's database transaction and "
    "nova loses writes made in one (the network info cache, PCI claims). "
    "tests/functional/__init__.py must import nova.tests.functional, "
    "which patches, before anything else from nova.")


class EventletPatchedFirstTest(test_base.TestCase):

    def test_each_greenthread_has_its_own_database_transaction(self):
        if not monkey_patch.is_patched():
            self.skipTest('nova runs on native threads here: oslo.db '
                          'keeps a transaction per thread already')
        import eventlet
        transactions = enginefacade._TransactionContextTLocal()
        transactions.current = 'this greenthread'
        seen = eventlet.spawn(getattr, transactions, 'current', None).wait()
        self.assertIsNone(seen, PATCHED_TOO_LATE)


class _RecordsTheScheduler(unittest.TestCase):
    """A test the way nova's start: nova's configuration fixture first."""

    seen = []

    def runTest(self):
        fixture = nova_conf_fixture.ConfFixture(CONF)
        fixture.setUp()
        self.addCleanup(fixture.cleanUp)
        group = CONF.filter_scheduler
        self.seen.append((list(group.available_filters),
                          list(group.enabled_filters),
                          list(group.weight_classes)))


class OurPluginsPerTestTest(test_base.TestCase):

    def _run_twice(self):
        _RecordsTheScheduler.seen = []
        result = unittest.TestResult()
        for _ in range(2):
            shipped.with_our_plugins(_RecordsTheScheduler()).run(result)
        self.assertTrue(result.wasSuccessful(), result.errors)
        return _RecordsTheScheduler.seen

    def test_every_test_has_our_plugins_after_nova_defaults(self):
        expected = shipped.operator_defaults()
        for available, enabled, weighers in self._run_twice():
            self.assertEqual(expected['available_filters'], available)
            self.assertEqual(expected['enabled_filters'], enabled)
            self.assertEqual(expected['weight_classes'], weighers)
            self.assertEqual(shipped.nova_default('enabled_filters'),
                             enabled[:-len(shipped.OUR_FILTERS)])

    def test_nova_defaults_are_back_after_each_test(self):
        self._run_twice()
        for name in shipped.operator_defaults():
            self.assertEqual(shipped.nova_default(name),
                             list(getattr(CONF.filter_scheduler, name)))
