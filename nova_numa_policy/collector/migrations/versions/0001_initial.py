"""Initial collector schema: hosts, report history, instances, actions.

Revision ID: 0001
Revises:
Create Date: 2025-01-31
"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

# Spelled out here rather than imported from models: a migration must keep
# creating the schema of its own revision whatever the models become.
_TIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql', 'mariadb')
_TABLE_ARGS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _json_list():
    return db_types.JsonEncodedList(mysql_as_medium=True)


def _json_dict():
    return db_types.JsonEncodedDict(mysql_as_medium=True)


def _id():
    return sa.Column('id', sa.Integer, primary_key=True, autoincrement=True)


def upgrade():
    op.create_table(
        'numa_hosts',
        _id(),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('hypervisor_hostname', sa.String(255), nullable=False),
        sa.Column('agent_version', sa.String(255), nullable=False),
        sa.Column('seq', sa.BigInteger, nullable=False),
        sa.Column('generated_at', _TIME, nullable=False),
        sa.Column('received_at', _TIME, nullable=False),
        sa.Column('period', sa.Float, nullable=False),
        sa.Column('numa_nodes', _json_list(), nullable=False),
        sa.Column('nics', _json_list(), nullable=False),
        sa.Column('enforceable_policies', _json_list(), nullable=False),
        sa.Column('instance_count', sa.Integer, nullable=False),
        sa.UniqueConstraint('host', name='uniq_numa_hosts0host'),
        **_TABLE_ARGS)
    op.create_table(
        'numa_reports',
        _id(),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('seq', sa.BigInteger, nullable=False),
        sa.Column('generated_at', _TIME, nullable=False),
        sa.Column('received_at', _TIME, nullable=False),
        sa.Column('payload', _json_dict(), nullable=False),
        sa.UniqueConstraint('host', 'seq', 'generated_at',
                            name='uniq_numa_reports0host0seq0generated_at'),
        sa.Index('numa_reports_host_generated_at_idx', 'host',
                 'generated_at'),
        **_TABLE_ARGS)
    op.create_table(
        'numa_instances',
        _id(),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('requested_policy', sa.String(64), nullable=True),
        sa.Column('applied_policy', sa.String(64), nullable=False),
        sa.Column('memory_mb_per_node', _json_dict(), nullable=False),
        sa.Column('vcpu_cpus', _json_list(), nullable=False),
        sa.Column('io_rate', sa.Float, nullable=False),
        sa.Column('io_intensive', sa.Boolean, nullable=False),
        sa.Column('access_class', sa.String(16), nullable=True),
        sa.Column('generated_at', _TIME, nullable=False),
        sa.UniqueConstraint('uuid', name='uniq_numa_instances0uuid'),
        sa.Index('numa_instances_host_idx', 'host'),
        **_TABLE_ARGS)
    op.create_table(
        'numa_actions',
        _id(),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('seq', sa.BigInteger, nullable=False),
        sa.Column('generated_at', _TIME, nullable=False),
        sa.Column('received_at', _TIME, nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=True),
        sa.Column('kind', sa.String(64), nullable=False),
        sa.Column('outcome', sa.String(16), nullable=False),
        sa.Column('reason', sa.Text, nullable=False),
        sa.Column('details', _json_dict(), nullable=False),
        sa.UniqueConstraint('host', 'seq', 'generated_at',
                            name='uniq_numa_actions0host0seq0generated_at'),
        sa.Index('numa_actions_instance_uuid_idx', 'instance_uuid'),
        **_TABLE_ARGS)


def downgrade():
    for table in ('numa_actions', 'numa_instances', 'numa_reports',
                  'numa_hosts'):
        op.drop_table(table)
