"""Options of the ``[numa_policy_collector]`` group: reports into SQL."""

from oslo_config import cfg

from nova_numa_policy.conf import base

GROUP = cfg.OptGroup(
    'numa_policy_collector',
    title='NUMA policy collector',
    help='How the collector stores agent reports and actions, and where '
         'the REST API reads them.')

OPTS = [
    cfg.StrOpt(
        'connection',
        default='sqlite:////var/lib/nova-numa-policy/collector.sqlite',
        secret=True,
        help='''
SQLAlchemy URL of the collector's database.

The collector writes it and the REST API reads it. SQLite suits a single
collector; use MariaDB/MySQL (``mysql+pymysql://``) or PostgreSQL when the
API runs on other hosts or more than one collector runs.

Possible values:

* Any SQLAlchemy URL whose driver is installed.

Related options:

* ``numa-policy-db-sync`` creates and upgrades the schema at this URL.
'''),
    cfg.StrOpt(
        'pool',
        default='numa-policy-collector',
        help='''
oslo.messaging listener pool of the collectors.

Every pool receives every report once; collectors in one pool share the
work. Consumers that need their own copy of every report (each
nova-scheduler's report cache) must use a different pool.

Possible values:

* A pool name shared by all collectors writing to one database.

Related options:

* ``[numa_policy_reports] topic``
'''),
    cfg.IntOpt(
        'report_history_per_host',
        default=288,
        min=1,
        help='''
How many reports per host the collector keeps in the history.

The latest report of every host is always kept, apart from the history;
older history rows are deleted as new reports arrive. 288 is one day of
reports sent every five minutes.

Possible values:

* A positive integer.

Related options:

* ``action_history_per_host``
'''),
    cfg.IntOpt(
        'action_history_per_host',
        default=10000,
        min=1,
        help='''
How many agent actions per host the collector keeps.

Older actions are deleted as new ones arrive.

Possible values:

* A positive integer.

Related options:

* ``report_history_per_host``
'''),
    cfg.IntOpt(
        'db_retries',
        default=3,
        min=0,
        help='''
How many times a failed database write is retried before the message is
handed back to the broker.

A write that still fails is requeued, so nothing is lost while the
database restarts; redelivery is harmless because reports and actions
are stored once per host, sequence number and generation time.

Possible values:

* 0 (no retry, requeue at once) or a positive integer.

Related options:

* ``requeue_delay``
'''),
    cfg.FloatOpt(
        'requeue_delay',
        default=2.0,
        min=0.0,
        help='''
Seconds to wait before handing a message the database refused back to
the broker.

The wait keeps a collector from spinning on redeliveries while the
database is away.

Possible values:

* Zero or a positive number of seconds.

Related options:

* ``db_retries``
* ``requeue_timeout``
'''),
    cfg.FloatOpt(
        'requeue_timeout',
        default=900.0,
        min=0.0,
        help='''
How long a message the database keeps refusing with a transient error
(connection lost, deadlock) is handed back to the broker, in seconds
from its first refusal. After that it is dropped and counted
("requeue limit"): a report that old is history, not news.

A database that refuses the collector's credentials is not transient:
the message is handed back for as long as it lasts (nothing is lost
while an operator corrects the configuration), and every refusal is
logged as an error and counted ("database refused access").

Possible values:

* Zero or a positive number of seconds.
'''),
]


register_opts, list_opts = base.group_functions(GROUP, OPTS)
