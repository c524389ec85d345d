"""The alembic migrations on a real SQLite file."""

from oslo_db.sqlalchemy import test_migrations
import sqlalchemy as sa

from nova_numa_policy.collector import migration
from nova_numa_policy.collector import models
from tests import base as test_base
from tests.unit.collector import base

TABLES = {'numa_hosts', 'numa_reports', 'numa_instances', 'numa_actions'}


class MigrationTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.engine = self.useFixture(base.SqliteStorage()).storage.engine

    def test_head_creates_every_table(self):
        self.assertEqual('0003', migration.current_revision(self.engine))
        self.assertEqual(TABLES, TABLES & set(sa.inspect(self.engine)
                                              .get_table_names()))

    def test_downgrade_to_base_drops_every_table(self):
        migration.downgrade(self.engine, 'base')
        self.assertFalse(TABLES & set(sa.inspect(self.engine)
                                      .get_table_names()))
        migration.upgrade(self.engine)
        self.assertEqual('0003', migration.current_revision(self.engine))


class MemoryDemotionMigrationTest(test_base.TestCase):
    """0003 adds a host's memory_demotion beside the rows it finds."""

    def setUp(self):
        super().setUp()
        self.fixture = self.useFixture(base.SqliteStorage())
        self.engine = self.fixture.storage.engine

    def test_hosts_stored_before_read_as_not_said(self):
        migration.downgrade(self.engine, '0002')
        self.assertNotIn('memory_demotion', self._host_columns())
        with self.engine.begin() as connection:
            connection.execute(sa.text(
                "INSERT INTO numa_hosts (host, hypervisor_hostname, "
                "agent_version, seq, generated_at, received_at, period, "
                "numa_nodes, nics, enforceable_policies, instance_count) "
                "VALUES ('compute-1', 'compute-1', '1', 1, "
                "'2025-01-31 12:00:00', '2025-01-31 12:00:01', 60.0, "
                "'[]', '[]', '[]', 0)"))
        migration.upgrade(self.engine)
        self.assertIn('memory_demotion', self._host_columns())
        self.assertIsNone(
            self.fixture.storage.get_host('compute-1')['memory_demotion'])
        migration.downgrade(self.engine, '0002')
        self.assertNotIn('memory_demotion', self._host_columns())

    def _host_columns(self):
        return {c['name'] for c in sa.inspect(self.engine).get_columns(
            'numa_hosts')}


class ModelsMatchMigrationsTest(test_migrations.ModelsMigrationsSync,
                                test_base.TestCase):
    """The models describe exactly what the migrations create."""

    def setUp(self):
        super().setUp()
        fixture = self.useFixture(base.SqliteStorage())
        self.engine = sa.create_engine(fixture.url)
        self.addCleanup(self.engine.dispose)
        # Start empty: the test runs the migrations itself.
        migration.downgrade(self.engine, 'base')

    def get_engine(self):
        return self.engine

    def get_metadata(self):
        return models.Base.metadata

    def db_sync(self, engine):
        migration.upgrade(engine)
