"""SQLAlchemy models of the collector database.

The schema itself is created and upgraded by the alembic migrations in
``migrations/``; these models describe the head revision and a test keeps
the two in step.
"""

from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm

# Report times are compared to order reports and to recognise redelivery,
# so MySQL/MariaDB must keep the microseconds its DATETIME drops by default.
PreciseDateTime = sa.DateTime().with_variant(
    mysql.DATETIME(fsp=6), 'mysql', 'mariadb')


def _json_list():
    # MEDIUMTEXT on MySQL: a 64-node host's CPU lists outgrow TEXT.
    return db_types.JsonEncodedList(mysql_as_medium=True)


def _json_dict():
    return db_types.JsonEncodedDict(mysql_as_medium=True)


class Base(orm.DeclarativeBase):
    pass


_TABLE_ARGS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


class Host(Base):
    """The latest report of one compute host."""

    __tablename__ = 'numa_hosts'
    __table_args__ = (
        sa.UniqueConstraint('host', name='uniq_numa_hosts0host'),
        _TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    host = sa.Column(sa.String(255), nullable=False)
    hypervisor_hostname = sa.Column(sa.String(255), nullable=False)
    agent_version = sa.Column(sa.String(255), nullable=False)
    seq = sa.Column(sa.BigInteger, nullable=False)
    # The agent process of the latest report (None before report 1.1).
    boot_id = sa.Column(sa.String(36), nullable=True)
    generated_at = sa.Column(PreciseDateTime, nullable=False)
    received_at = sa.Column(PreciseDateTime, nullable=False)
    period = sa.Column(sa.Float, nullable=False)
    numa_nodes = sa.Column(_json_list(), nullable=False)
    nics = sa.Column(_json_list(), nullable=False)
    enforceable_policies = sa.Column(_json_list(), nullable=False)
    instance_count = sa.Column(sa.Integer, nullable=False)
    # Whether the host's kernel demotes pages to a lower memory tier
    # (None before report 1.8, or where the kernel does not say).
    memory_demotion = sa.Column(sa.Boolean, nullable=True)


class Report(Base):
    """One report as received: the bounded history."""

    __tablename__ = 'numa_reports'
    __table_args__ = (
        sa.UniqueConstraint(
            'host', 'seq', 'generated_at',
            name='uniq_numa_reports0host0seq0generated_at'),
        sa.Index('numa_reports_host_generated_at_idx', 'host',
                 'generated_at'),
        _TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    host = sa.Column(sa.String(255), nullable=False)
    seq = sa.Column(sa.BigInteger, nullable=False)
    generated_at = sa.Column(PreciseDateTime, nullable=False)
    received_at = sa.Column(PreciseDateTime, nullable=False)
    payload = sa.Column(_json_dict(), nullable=False)


class Instance(Base):
    """An instance as its host's latest report describes it."""

    __tablename__ = 'numa_instances'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_numa_instances0uuid'),
        sa.Index('numa_instances_host_idx', 'host'),
        _TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    host = sa.Column(sa.String(255), nullable=False)
    requested_policy = sa.Column(sa.String(64), nullable=True)
    applied_policy = sa.Column(sa.String(64), nullable=False)
    memory_mb_per_node = sa.Column(_json_dict(), nullable=False)
    vcpu_cpus = sa.Column(_json_list(), nullable=False)
    io_rate = sa.Column(sa.Float, nullable=False)
    io_intensive = sa.Column(sa.Boolean, nullable=False)
    access_class = sa.Column(sa.String(16), nullable=True)
    # The time of the report that last described the instance.
    generated_at = sa.Column(PreciseDateTime, nullable=False)


class Action(Base):
    """One agent action (``numa_policy.action`` event)."""

    __tablename__ = 'numa_actions'
    __table_args__ = (
        sa.UniqueConstraint(
            'host', 'seq', 'generated_at',
            name='uniq_numa_actions0host0seq0generated_at'),
        sa.Index('numa_actions_instance_uuid_idx', 'instance_uuid'),
        _TABLE_ARGS,
    )

    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    host = sa.Column(sa.String(255), nullable=False)
    seq = sa.Column(sa.BigInteger, nullable=False)
    generated_at = sa.Column(PreciseDateTime, nullable=False)
    received_at = sa.Column(PreciseDateTime, nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=True)
    kind = sa.Column(sa.String(64), nullable=False)
    outcome = sa.Column(sa.String(16), nullable=False)
    reason = sa.Column(sa.Text, nullable=False)
    details = sa.Column(_json_dict(), nullable=False)
