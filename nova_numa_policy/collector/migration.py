"""Create and upgrade the collector schema with alembic."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
import sqlalchemy as sa

MIGRATIONS = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(engine):
    config = alembic_config.Config()
    config.set_main_option('script_location', MIGRATIONS)
    # env.py runs on this engine rather than reading a URL, so secrets in
    # the URL never pass through alembic's ini-style interpolation.
    config.attributes['engine'] = engine
    return config


def upgrade(engine, revision='head'):
    """Bring the database at ``engine`` to ``revision``."""
    command.upgrade(_config(engine), revision)


def downgrade(engine, revision):
    command.downgrade(_config(engine), revision)


def current_revision(engine):
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        return context.get_current_revision()


def upgrade_url(url, revision='head'):
    engine = sa.create_engine(url)
    try:
        upgrade(engine, revision)
    finally:
        engine.dispose()
