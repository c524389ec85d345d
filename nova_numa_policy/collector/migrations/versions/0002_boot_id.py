"""Hosts remember the agent boot of their latest report.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    # Reports of one agent boot are ordered by seq, whatever the clocks;
    # rows from before have none, and are ordered by time as before.
    op.add_column('numa_hosts',
                  sa.Column('boot_id', sa.String(36), nullable=True))


def downgrade():
    op.drop_column('numa_hosts', 'boot_id')
