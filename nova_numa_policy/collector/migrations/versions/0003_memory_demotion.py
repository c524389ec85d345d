"""Hosts remember whether their kernel demotes to a lower memory tier.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    # Report 1.8's memory_demotion; rows from before have none, which
    # the API shows as not said. Each node's memory tier needs no
    # column: a host's nodes are stored whole, as JSON.
    op.add_column('numa_hosts',
                  sa.Column('memory_demotion', sa.Boolean, nullable=True))


def downgrade():
    op.drop_column('numa_hosts', 'memory_demotion')
