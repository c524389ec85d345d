"""A collector database on a real SQLite file, migrated to head."""

import os

import fixtures

from nova_numa_policy.collector import db
from nova_numa_policy.collector import migration


class SqliteStorage(fixtures.Fixture):
    """A migrated SQLite database in a temporary directory."""

    def __init__(self, **kwargs):
        super().__init__()
        self._kwargs = kwargs

    def _setUp(self):
        path = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///' + os.path.join(path, 'collector.sqlite')
        self.storage = db.Storage(self.url, **self._kwargs)
        self.addCleanup(self.storage.dispose)
        migration.upgrade(self.storage.engine)
