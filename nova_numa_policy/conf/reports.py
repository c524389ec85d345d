"""Options of the ``[numa_policy_reports]`` group: the report channel."""

from oslo_config import cfg

from nova_numa_policy.conf import base

# The report version agents send by default: the newest this release
# writes (objects.report.NumaHostReport.VERSION, which a test holds equal).
REPORT_VERSION = '1.9'
# Seconds a report may be dated ahead of the receiver's clock.
DEFAULT_MAX_CLOCK_SKEW = 60.0

GROUP = cfg.OptGroup(
    'numa_policy_reports',
    title='NUMA policy reports',
    help='How agents send HostReports and how consumers (the scheduler '
         'plugins and the collector) read them.')

OPTS = [
    cfg.StrOpt(
        'topic',
        default='numa_policy_reports',
        help='''
oslo.messaging notification topic the agents send HostReports on.

Possible values:

* Any topic name; agents and every consumer must use the same one.

Related options:

* ``[oslo_messaging_notifications] transport_url`` selects the broker.
'''),
    cfg.StrOpt(
        'report_version',
        default=REPORT_VERSION,
        help='''
HostReport version the agent sends.

During a rolling upgrade, pin the agents to the version the oldest
consumer reads; unpin once every scheduler and collector is upgraded.
Consumers read any older minor version, and drop fields of a newer one.

Possible values:

* A ``1.x`` version no newer than this agent's own.
'''),
    cfg.IntOpt(
        'max_report_bytes',
        default=1024 * 1024,
        min=1024,
        help='''
Largest serialized HostReport a consumer accepts, in bytes.

Larger reports are dropped and counted, never stored.

Possible values:

* An integer of at least 1024.
'''),
    cfg.FloatOpt(
        'max_clock_skew',
        default=DEFAULT_MAX_CLOCK_SKEW,
        min=1.0,
        help='''
How far ahead of a consumer's clock a report may be dated, in seconds.

A report dated later is dropped and counted ("from the future"): kept,
it would stay its host's newest until the clocks caught up, hiding every
genuine report. Keep the clocks of compute nodes and controllers in sync
(NTP); this only bounds the damage when they are not.

Possible values:

* A number of seconds of at least 1.
'''),
    cfg.StrOpt(
        'secret',
        secret=True,
        help='''
Shared secret that signs HostReports (HMAC-SHA256).

Set the same value on every agent, nova-scheduler and collector. When
set, agents sign every report and consumers drop (and count) reports
that are unsigned or whose signature does not match. Unset, reports are
neither signed nor verified.

Possible values:

* Unset (no signing), or a long random string kept like a password.
  Every character of the line is part of the secret, commas included,
  but for leading and trailing white space.

Related options:

* ``previous_secret`` (key rotation).
'''),
    cfg.MultiStrOpt(
        'previous_secret',
        default=[],
        secret=True,
        help='''
A secret consumers still accept besides ``secret``, during a rotation.

Give the option once per secret, one secret per line. Every character of
the line is part of the secret, commas included, but for leading and
trailing white space::

    previous_secret = first,old secret
    previous_secret = second old secret

To rotate: add the new secret here on every consumer, then set it as
``secret`` on every agent and consumer (moving the old one here), then
remove the old one. Agents sign with ``secret`` only.

Possible values:

* Unset, or any number of secrets that were ``secret`` before.

Related options:

* ``previous_secrets``, the deprecated comma-separated list, is accepted
  besides.
'''),
    cfg.ListOpt(
        'previous_secrets',
        default=[],
        secret=True,
        deprecated_for_removal=True,
        deprecated_reason='A comma ends a secret in this list, so a secret '
                          'holding one cannot be written here. Use '
                          '``previous_secret``, once per secret.',
        help='''
Secrets consumers still accept besides ``secret``, as a comma-separated
list (deprecated: use ``previous_secret``).

Still read, besides ``previous_secret``: configuration written for earlier
releases keeps working. A secret that holds a comma cannot be written
here; write it as a ``previous_secret`` line.

Possible values:

* Empty, or secrets without commas that were ``secret`` before.
'''),
]


def accepted_secrets(group):
    """The secrets a consumer verifies against, the signing one first."""
    if not group.secret:
        return ()
    previous = list(group.previous_secret) + list(group.previous_secrets)
    # Without repeats, in the order given: every payload is checked
    # against each.
    return tuple(dict.fromkeys(
        s for s in [group.secret] + previous if s))


register_opts, list_opts = base.group_functions(GROUP, OPTS)
