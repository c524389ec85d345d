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
        self.assertEqual('0002', migration.current_revision(self.engine))
        self.assertEqual(TABLES, TABLES & set(sa.inspect(self.engine)
                                              .get_table_names()))

    def test_downgrade_to_base_drops_every_table(self):
        migration.downgrade(self.engine, 'base')
        self.assertFalse(TABLES & set(sa.inspect(self.engine)
                                      .get_table_names()))
        migration.upgrade(self.engine)
        self.assertEqual('0002', migration.current_revision(self.engine))


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
