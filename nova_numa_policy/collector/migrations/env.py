"""alembic environment: run migrations on the engine migration.py passes."""

from alembic import context

from nova_numa_policy.collector import models


def run_migrations_online():
    engine = context.config.attributes['engine']
    with engine.connect() as connection:
        context.configure(connection=connection,
                          target_metadata=models.Base.metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
