"""The collector database: writes from the listener, reads for the API.

Every method opens its own oslo.db enginefacade transaction and returns
plain dicts, so neither the listener nor the REST API sees a session.

Listings page by key: a marker is the sort key of the last item seen and
the next page starts after it, whether or not that item still exists, so
a host or action deleted between two pages does not break the walk.
"""

import operator

from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

from nova_numa_policy.collector import models
from nova_numa_policy.collector import records


class _Context:
    """enginefacade keeps its per-thread transaction state on this."""


def _as_dict(row, columns):
    return {name: getattr(row, name) for name in columns}


HOST_COLUMNS = tuple(c.name for c in models.Host.__table__.columns
                     if c.name != 'id')
INSTANCE_COLUMNS = tuple(c.name for c in models.Instance.__table__.columns
                         if c.name != 'id')
ACTION_COLUMNS = tuple(c.name for c in models.Action.__table__.columns)
REPORT_SUMMARY_COLUMNS = ('seq', 'generated_at', 'received_at')


class Storage:
    """The collector database at one SQLAlchemy URL."""

    def __init__(self, connection, report_history_per_host=288,
                 action_history_per_host=10000):
        self.report_history_per_host = report_history_per_host
        self.action_history_per_host = action_history_per_host
        self._facade = enginefacade.transaction_context()
        # No connection test loop at start: the listener retries and
        # requeues on its own, and the API answers 500 rather than hang.
        self._facade.configure(connection=connection, sqlite_fk=True,
                               max_retries=0)

    @classmethod
    def from_conf(cls, conf):
        group = conf.numa_policy_collector
        return cls(group.connection,
                   report_history_per_host=group.report_history_per_host,
                   action_history_per_host=group.action_history_per_host)

    @property
    def engine(self):
        return self._facade.writer.get_engine()

    def dispose(self):
        self._facade.dispose_pool()

    def _writer(self):
        return self._facade.writer.using(_Context())

    def _reader(self):
        return self._facade.reader.using(_Context())

    # Writes -------------------------------------------------------------

    def store_report(self, report, received_at):
        """Store a checked HostReport; return False if it was stored before.

        The history row is keyed on host, seq and generated_at, which makes
        redelivery a no-op. The latest host and instance rows only move
        forward: an older report arriving late joins the history alone.
        """
        history = records.history_row(report, received_at)
        with self._writer() as session:
            if _exists(session, models.Report, history):
                return False
            session.add(models.Report(**history))
            _prune(session, models.Report, report.host,
                   self.report_history_per_host,
                   (models.Report.generated_at.desc(),
                    models.Report.id.desc()))
            row = records.host_row(report, received_at)
            stored = session.scalars(sa.select(models.Host).filter_by(
                host=report.host)).first()
            if records.is_newer(row, stored):
                _upsert(session, models.Host, stored, row)
                _replace_instances(session, report.host,
                                   row['generated_at'],
                                   records.instance_rows(report))
        return True

    def store_action(self, action, received_at):
        """Store a checked action dict; return False if stored before."""
        row = records.action_row(action, received_at)
        with self._writer() as session:
            if _exists(session, models.Action, row):
                return False
            session.add(models.Action(**row))
            _prune(session, models.Action, row['host'],
                   self.action_history_per_host,
                   (models.Action.id.desc(),))
        return True

    # Reads --------------------------------------------------------------

    def _read(self, query, limit, columns):
        with self._reader() as session:
            rows = session.scalars(query.limit(limit)).all()
            return [_as_dict(row, columns) for row in rows]

    def list_hosts(self, limit, marker=None):
        query = _where_given(
            sa.select(models.Host).order_by(models.Host.host),
            (models.Host.host, operator.gt, marker))
        return self._read(query, limit, HOST_COLUMNS)

    def get_host(self, host):
        """The host's latest report and its instances, or None."""
        with self._reader() as session:
            row = session.scalars(sa.select(models.Host).filter_by(
                host=host)).first()
            if row is None:
                return None
            result = _as_dict(row, HOST_COLUMNS)
            instances = session.scalars(
                sa.select(models.Instance).filter_by(host=host)
                .order_by(models.Instance.uuid)).all()
            result['instances'] = [_as_dict(i, INSTANCE_COLUMNS)
                                   for i in instances]
            return result

    def list_reports(self, host, limit):
        """The newest history entries of a host, newest first."""
        with self._reader() as session:
            rows = session.scalars(
                sa.select(models.Report).filter_by(host=host)
                .order_by(models.Report.generated_at.desc(),
                          models.Report.id.desc())
                .limit(limit)).all()
            return [_as_dict(row, REPORT_SUMMARY_COLUMNS) for row in rows]

    def list_instances(self, limit, marker=None, host=None):
        query = _where_given(
            sa.select(models.Instance).order_by(models.Instance.uuid),
            (models.Instance.host, operator.eq, host),
            (models.Instance.uuid, operator.gt, marker))
        return self._read(query, limit, INSTANCE_COLUMNS)

    def get_instance(self, uuid):
        with self._reader() as session:
            row = session.scalars(sa.select(models.Instance).filter_by(
                uuid=uuid)).first()
            return None if row is None else _as_dict(row, INSTANCE_COLUMNS)

    def list_actions(self, limit, marker=None, host=None,
                     instance_uuid=None):
        """Actions newest first; ``marker`` is the id of the last one seen."""
        query = _where_given(
            sa.select(models.Action).order_by(models.Action.id.desc()),
            (models.Action.host, operator.eq, host),
            (models.Action.instance_uuid, operator.eq, instance_uuid),
            (models.Action.id, operator.lt, marker))
        return self._read(query, limit, ACTION_COLUMNS)


def _where_given(query, *conditions):
    """``query`` narrowed by each ``(column, compare, value)`` given.

    A listing's filters and marker are optional: a value of None means
    "any" and adds no condition.
    """
    for column, compare, value in conditions:
        if value is not None:
            query = query.where(compare(column, value))
    return query


def _exists(session, model, row):
    query = sa.select(model.id).filter_by(
        host=row['host'], seq=row['seq'], generated_at=row['generated_at'])
    return session.scalars(query).first() is not None


def _prune(session, model, host, keep, order):
    """Delete a host's rows beyond the newest ``keep``."""
    session.flush()
    stale = session.scalars(
        sa.select(model.id).where(model.host == host)
        .order_by(*order).offset(keep)).all()
    if stale:
        session.execute(sa.delete(model).where(model.id.in_(stale)))


def _upsert(session, model, stored, row):
    if stored is None:
        session.add(model(**row))
        return
    for name, value in row.items():
        setattr(stored, name, value)


def _replace_instances(session, host, generated_at, rows):
    """Make the instance rows say what the host's newest report says.

    An instance that moved to another host keeps the row the newer of the
    two hosts' reports wrote; one that left this host loses its row.
    """
    stored = {
        row.uuid: row for row in session.scalars(
            sa.select(models.Instance).where(
                sa.or_(models.Instance.host == host,
                       models.Instance.uuid.in_(list(rows)))))
    }
    for uuid, row in rows.items():
        current = stored.pop(uuid, None)
        if current is None or current.generated_at <= generated_at:
            _upsert(session, models.Instance, current, row)
    for current in stored.values():
        if current.host == host and current.generated_at <= generated_at:
            session.delete(current)


def safe_url(url):
    """The URL without its password, for logs."""
    return sa.engine.make_url(url).render_as_string(hide_password=True)
