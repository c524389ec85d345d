"""Reports at the edges of validation, read alike by both consumers.

A probe of 2,000 crafted reports found names ending in a newline, memory
keys like "00", numbers and times that escaped the checks as
OverflowError or ValueError, time forms the scheduler's cache and the
collector read differently, a non-ASCII signature that raised TypeError,
secrets a comma cut in two and actions checked more loosely than
reports. One test class per defect, then a deterministic fuzz of 2,000
reports through both consumers: they must keep exactly the same ones,
with equal values, and refuse the rest for the same reason.
"""

import collections
import copy
import datetime
import functools
import json
import logging
import os
import random
import tempfile
from unittest import mock
import uuid

import fixtures
from oslo_config import cfg

from nova_numa_policy.collector import actions
from nova_numa_policy.collector import listener
from nova_numa_policy.collector import records
from nova_numa_policy.conf import reports as reports_conf
from nova_numa_policy.contracts import exception
from nova_numa_policy.objects import report as report_obj
from nova_numa_policy.objects import signing
from nova_numa_policy.objects import validation
from nova_numa_policy.objects import wire as report_wire
from nova_numa_policy.rest import errors as rest_errors
from nova_numa_policy.rest import validation as rest_validation
from nova_numa_policy.scheduling import summary as summary_mod
from placement_filters import cache as cache_mod
from tests import base as test_base
from tests import report_factory
from tests.unit.collector import base
from tests.unit.collector import fakes
from tests.unit import test_hostile_reports as hostile_reports

UTC = datetime.timezone.utc
NOW = report_factory.make_report().generated_at
MAX_BYTES = 256 * 1024
MAX_SKEW = 60
DATA = report_wire.DATA_KEY
# A comma in it: secrets may now hold one (item 6).
SECRET = 'shared,secret'
MALFORMED = report_wire.REFUSED_MALFORMED


def primitive(**fields):
    return report_wire.dump_report(report_factory.make_report(**fields))


def signed(payload, secret=SECRET):
    return signing.sign(payload, secret)


def data_of(payload, *path):
    """The data of the object at ``path`` (list name, index, ...)."""
    target = payload
    for list_name, index in zip(path[::2], path[1::2]):
        target = target[DATA][list_name][index]
    return target[DATA]


class BothConsumers:
    """The scheduler's report cache and the collector, fed alike."""

    def __init__(self, storage, secrets=(SECRET,)):
        self.secrets = tuple(secrets)
        self.storage = storage
        self.cache = cache_mod.ReportCache(
            max_hosts=10 ** 6, max_report_bytes=MAX_BYTES, io_rate=1000.0,
            ttl=10 ** 9, clock=NOW.timestamp, secrets=secrets,
            max_skew=MAX_SKEW)
        # A clock that stands still: rate-limited logging stays limited
        # however long a loaded machine takes.
        self.collector = listener.CollectorEndpoint(
            storage, MAX_BYTES, db_retries=0, clock=lambda: NOW,
            sleep=lambda _: None, secrets=secrets, max_skew=MAX_SKEW,
            monotonic=lambda: 0.0)

    def offer(self, payload, event_type=report_obj.EVENT_TYPE):
        """(kept by the cache, cache drops, collector counts) of one."""
        cache_before = collections.Counter(self.cache.dropped)
        collector_before = collections.Counter(self.collector.counters)
        kept = self.cache.ingest(copy.deepcopy(payload))
        answer = self.collector.info({}, 'numa-policy-agent.probe',
                                     event_type, copy.deepcopy(payload), {})
        assert answer == listener.HANDLED, answer
        return (kept, self.cache.dropped - cache_before,
                self.collector.counters - collector_before)


class EdgeTestCase(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.storage = self.useFixture(base.SqliteStorage()).storage
        self.log = self.useFixture(fixtures.FakeLogger(
            level=logging.DEBUG,
            format='%(levelname)s %(name)s %(message)s'))

    def consumers(self, secrets=(SECRET,)):
        return BothConsumers(self.storage, secrets)

    def assertRefusedByBoth(self, payload, reason=MALFORMED,
                            secrets=(SECRET,)):
        kept, dropped, counted = self.consumers(secrets).offer(payload)
        self.assertFalse(kept)
        self.assertEqual({reason: 1}, dict(dropped))
        self.assertEqual({reason: 1}, dict(counted))

    def assertKeptByBoth(self, payload, secrets=(SECRET,)):
        kept, dropped, counted = self.consumers(secrets).offer(payload)
        self.assertTrue(kept, dict(dropped))
        self.assertEqual({'reports_stored': 1}, dict(counted))

    def assertNoTraceback(self):
        output = self.log.output
        self.assertNotIn('Traceback', output)
        self.assertNotIn('ERROR ', output)


class NamesTest(EdgeTestCase):
    """1. A name is matched whole: "host\\n" is no second "host"."""

    def test_a_newline_anywhere_is_no_name(self):
        for value in ('host\n', 'host\r\n', '\nhost', 'ho\nst', 'host\x85',
                      'host\n\n'):
            self.assertFalse(validation.is_name(value), repr(value))
        for value in ('host', 'h\u00f6st', 'host ', 'x' * 255):
            self.assertTrue(validation.is_name(value), repr(value))

    def test_both_consumers_refuse_a_host_with_a_final_newline(self):
        self.assertRefusedByBoth(signed(primitive(host='compute1\n')))
        self.assertKeptByBoth(signed(primitive(host='compute1')))
        self.assertEqual(['compute1'], [
            row['host'] for row in self.storage.list_hosts(10)])

    def test_every_name_of_a_report_is_matched_whole(self):
        for path, name in (((), 'hypervisor_hostname'),
                           ((), 'agent_version'), (('nics', 0), 'name'),
                           (('nics', 0), 'physnet')):
            payload = primitive()
            data_of(payload, *path)[name] += '\n'
            self.assertRefusedByBoth(signed(payload))

    def test_an_action_s_identifiers_are_matched_whole(self):
        for overrides in ({'host': 'compute-1\n'}, {'kind': 'move_pages\n'},
                          {'version': '1.0\n'},
                          {'details': {'pages\n': 1}}):
            self.assertRaises(actions.MalformedAction, actions.load_action,
                              fakes.make_action_payload(**overrides))


class NodeKeysTest(EdgeTestCase):
    """2. A node id as text is canonical decimal: "00" is no node 0."""

    CANONICAL = ('0', '1', '9', '10', '1023')
    OTHERS = ('00', '01', '+0', '-0', ' 0', '0 ', '0\n', '\u0660', '\u00b2',
              '\uff10', '0x0', '1e0', '0.0', '', 'a', '10000', '1' * 5000)

    def test_only_canonical_decimal_names_a_node(self):
        for key in self.CANONICAL:
            self.assertTrue(validation.is_node_key(key), key)
        for key in self.OTHERS:
            self.assertFalse(validation.is_node_key(key), repr(key))
        self.assertFalse(validation.is_node_key(0))

    def test_both_consumers_refuse_memory_on_node_00(self):
        for key in self.OTHERS:
            payload = primitive(instances=[report_factory.make_instance(
                memory_mb_per_node={key: 256})])
            self.assertRefusedByBoth(signed(payload))
        self.assertNoTraceback()

    def test_digits_past_what_int_reads_are_no_integer(self):
        # The REST API's integer parameters share the rule.
        self.assertTrue(validation.is_ascii_int('1' * 4300))
        self.assertFalse(validation.is_ascii_int('1' * 4301))
        self.assertRaises(rest_errors.BadRequest,
                          rest_validation.positive_int, 'limit', '1' * 5000)

    def test_node_0_and_00_are_not_one_node_twice(self):
        payload = primitive(instances=[report_factory.make_instance(
            memory_mb_per_node={'0': 256, '00': 256})])
        self.assertRefusedByBoth(signed(payload))
        self.assertKeptByBoth(signed(primitive(
            instances=[report_factory.make_instance(
                memory_mb_per_node={'0': 256, '1': 256})])))


class NumbersTest(EdgeTestCase):
    """3. Numbers beyond a float, and unreadable times, are malformed."""

    FLOAT_PLACES = (((), 'period'), (('numa_nodes', 0), 'cpu_load'),
                    (('numa_nodes', 0), 'floating_load'),
                    (('instances', 0), 'io_rate'),
                    (('instances', 0), 'cpu_wait'))

    def test_a_float_field_refuses_an_integer_beyond_the_float_range(self):
        self.assertFalse(validation.is_number(10 ** 400))
        self.assertFalse(validation.is_number(-10 ** 400))
        self.assertTrue(validation.is_number(10 ** 308))
        for path, name in self.FLOAT_PLACES:
            payload = primitive()
            data_of(payload, *path)[name] = 10 ** 400
            self.assertRefusedByBoth(signed(payload))
        self.assertNoTraceback()

    def test_1e400_in_json_text_is_malformed(self):
        payload = primitive()
        data_of(payload, 'numa_nodes', 0)['cpu_load'] = 0.123456789
        text = json.dumps(payload).replace('0.123456789', '1e400')
        self.assertRefusedByBoth(text, secrets=())

    def test_times_that_escaped_are_malformed(self):
        for text in ('2026-W47-7T08:00:00Z', '20261122T080000Z',
                     '2026-11-22T08:00:00,5Z', '2026-11-22T08Z',
                     '0001-01-01T00:00:00+00:00',
                     '9999-12-31T23:59:59-01:00'):
            payload = primitive()
            payload[DATA]['generated_at'] = text
            self.assertRefusedByBoth(signed(payload))
        self.assertNoTraceback()

    def test_an_unforeseen_failure_is_logged_once_a_minute_too(self):
        consumers = self.consumers(secrets=())
        bug = RuntimeError('a bug of ours')
        with mock.patch.object(summary_mod, 'summarize', side_effect=bug), \
                mock.patch.object(records, 'parse_payload', side_effect=bug):
            for seq in range(20):
                consumers.offer(primitive(seq=seq))
        unexpected = report_wire.REFUSED_UNEXPECTED
        self.assertEqual(20, consumers.cache.dropped[unexpected])
        self.assertEqual(20, consumers.collector.counters[unexpected])
        self.assertEqual(1, self.log.output.count('failed unexpectedly'))
        self.assertEqual(1, self.log.output.count('could not be read'))

    def test_refusals_are_logged_rate_limited_and_never_as_tracebacks(self):
        consumers = self.consumers(secrets=())
        for seq in range(50):
            payload = primitive(seq=seq)
            payload[DATA]['period'] = 10 ** 400
            consumers.offer(payload)
        self.assertEqual(50, consumers.cache.dropped[MALFORMED])
        self.assertEqual(50, consumers.collector.counters[MALFORMED])
        self.assertEqual(2, self.log.output.count('Dropped a'))
        self.assertNoTraceback()


class TimesTest(EdgeTestCase):
    """4. One time parser, one exception type, for both consumers."""

    READ = {
        '2026-11-22T08:00:00Z': datetime.datetime(2026, 11, 22, 8, 0,
                                                  tzinfo=UTC),
        '2026-11-22T09:30:00+01:30': datetime.datetime(2026, 11, 22, 8, 0,
                                                       tzinfo=UTC),
        '2026-11-22T03:00:00-05:00': datetime.datetime(2026, 11, 22, 8, 0,
                                                       tzinfo=UTC),
        '2026-11-22T08:00:00.5Z': datetime.datetime(2026, 11, 22, 8, 0, 0,
                                                    500000, tzinfo=UTC),
        '2026-11-22T08:00:00.000001-00:00': datetime.datetime(
            2026, 11, 22, 8, 0, 0, 1, tzinfo=UTC),
        '1970-01-01T00:00:00Z': validation.EARLIEST_TIME,
    }
    REFUSED = (
        '2026-11-22T08:00:00', '2026-11-22T08:00:00.1234567Z',
        '2026-11-22T08:00:00.Z', '2026-11-22 08:00:00Z',
        '2026-11-22t08:00:00z', '2026-11-22T08:00:00+01',
        '2026-11-22T08:00:00+0100', '2026-11-22T08:00:00+01:00:30',
        '2026-11-22T08:00:00+24:00', '2026-11-22T08:00:00+01:60',
        '2026-11-22T24:00:00Z', '2026-12-31T23:59:60Z', '2026-02-30T08:00Z',
        '2026-02-30T08:00:00Z', '1969-12-31T23:59:59Z',
        '\uff12026-11-22T08:00:00Z', '2026-11-22T08:00:00Z\n',
        ' 2026-11-22T08:00:00Z', '+2026-11-22T08:00:00Z', '', 'yesterday',
        '2026-11-22', '2026-W47-7T08:00:00Z', '20261122T080000Z')

    def test_the_one_parser_reads_rfc_3339_to_utc(self):
        for text, moment in self.READ.items():
            parsed = validation.parse_time(text)
            self.assertEqual(moment, parsed, text)
            self.assertEqual(UTC, parsed.tzinfo, text)

    def test_every_other_form_is_a_malformed_report(self):
        for value in self.REFUSED + (None, 5, 1.5, b'2026'):
            exc = self.assertRaises(exception.MalformedReport,
                                    validation.parse_time, value)
            self.assertIsInstance(exc, exception.MalformedReport)

    def test_only_actions_read_a_time_without_zone_as_utc(self):
        self.assertEqual(
            datetime.datetime(2026, 11, 22, 8, 0, tzinfo=UTC),
            validation.parse_time('2026-11-22T08:00:00',
                                  zone_required=False))

    def test_both_consumers_hold_the_very_same_time(self):
        payload = primitive()
        payload[DATA]['generated_at'] = '2026-11-22T09:00:00.5+01:00'
        expected = datetime.datetime(2026, 11, 22, 8, 0, 0, 500000,
                                     tzinfo=UTC)
        data = report_wire.check_payload(copy.deepcopy(payload), MAX_BYTES)
        report = report_wire.read_payload(copy.deepcopy(payload), MAX_BYTES)
        self.assertEqual(expected, data['generated_at'])
        self.assertEqual(expected, report.generated_at)

    def test_a_report_read_back_dumps_as_sent(self):
        payload = primitive()
        back = report_wire.read_payload(copy.deepcopy(payload), MAX_BYTES)
        self.assertEqual(payload, report_wire.dump_report(back))


class SignatureTest(EdgeTestCase):
    """5. A non-ASCII signature is a bad signature, not a TypeError."""

    VALUES = ('\u00e9' * 64, '\ud800' * 64, '\uff10' * 64, 'a' * 63 + '\n',
              'G' * 64)

    def test_verify_refuses_it_as_a_bad_signature(self):
        for value in self.VALUES:
            payload = signed(primitive())
            payload[signing.SIGNATURE_KEY]['value'] = value
            self.assertRaises(exception.BadSignature, signing.verify,
                              payload, (SECRET,))

    def test_both_consumers_count_it_as_a_bad_signature(self):
        for value in self.VALUES:
            payload = signed(primitive())
            payload[signing.SIGNATURE_KEY]['value'] = value
            self.assertRefusedByBoth(payload,
                                     report_wire.REFUSED_BAD_SIGNATURE)
        self.assertNoTraceback()


class SecretsOptionTest(EdgeTestCase):
    """6. A secret may hold any character, commas included."""

    def conf(self, text):
        fd, path = tempfile.mkstemp(suffix='.conf')
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, 'w') as conf_file:
            conf_file.write(text)
        conf = cfg.ConfigOpts()
        reports_conf.register_opts(conf)
        conf(['--config-file', path])
        return conf.numa_policy_reports

    def test_each_previous_secret_line_is_one_secret(self):
        group = self.conf('[numa_policy_reports]\n'
                          'secret = new,one\n'
                          'previous_secret = old,one\n'
                          'previous_secret = older; with = signs\n')
        self.assertEqual(('new,one', 'old,one', 'older; with = signs'),
                         reports_conf.accepted_secrets(group))

    def test_the_deprecated_list_is_still_read_as_before(self):
        group = self.conf('[numa_policy_reports]\n'
                          'secret = new\n'
                          'previous_secrets = a,b\n'
                          'previous_secret = c,d\n')
        self.assertEqual(('new', 'c,d', 'a', 'b'),
                         reports_conf.accepted_secrets(group))

    def test_no_secret_accepts_nothing_to_verify(self):
        group = self.conf('[numa_policy_reports]\nprevious_secret = x\n')
        self.assertEqual((), reports_conf.accepted_secrets(group))

    def test_a_report_signed_with_a_previous_comma_secret_is_kept(self):
        group = self.conf('[numa_policy_reports]\n'
                          'secret = brand,new\n'
                          f'previous_secret = {SECRET}\n')
        self.assertKeptByBoth(signed(primitive()),
                              reports_conf.accepted_secrets(group))

    def test_the_help_says_so(self):
        opts = {opt.name: opt for opt in reports_conf.OPTS}
        self.assertIn('commas included', opts['previous_secret'].help)
        self.assertIn('commas included', opts['secret'].help)
        self.assertTrue(opts['previous_secrets'].deprecated_for_removal)


class ActionBoundsTest(EdgeTestCase):
    """7. Actions are bounded like reports."""

    def action(self, **overrides):
        return actions.load_action(fakes.make_action_payload(
            generated_at=NOW, **overrides))

    def test_details_hold_finite_numbers_only(self):
        for value in (float('nan'), float('inf'), float('-inf'), 10 ** 400,
                      2 ** 63, -2 ** 63 - 1, [2 ** 63], [float('nan')]):
            self.assertRaises(actions.MalformedAction, self.action,
                              details={'pages': value})
        action = self.action(details={'a': 2 ** 63 - 1, 'b': -2 ** 63,
                                      'c': 0.5, 'd': True, 'e': [1, 2]})
        # What is stored is JSON every reader reads.
        json.dumps(action['details'], allow_nan=False)

    def test_seq_is_within_the_reports_range(self):
        self.assertEqual(2 ** 63 - 1, self.action(seq=2 ** 63 - 1)['seq'])
        for seq in (2 ** 63, 10 ** 400, -1, 1.0, '1', True):
            self.assertRaises(actions.MalformedAction, self.action, seq=seq)

    def test_times_are_read_by_the_reports_parser(self):
        for text in TimesTest.REFUSED:
            if text == '2026-11-22T08:00:00':
                continue  # an action's time without zone is UTC
            exc = self.assertRaises(
                actions.MalformedAction, actions.load_action,
                dict(fakes.make_action_payload(), generated_at=text))
            self.assertIn('ISO 8601', str(exc))
        self.assertEqual(
            datetime.datetime(2026, 11, 22, 8, 0, 0, 500000, tzinfo=UTC),
            actions.load_action(dict(
                fakes.make_action_payload(),
                generated_at='2026-11-22T09:00:00.5+01:00'))['generated_at'])

    def test_the_collector_refuses_an_action_from_the_future(self):
        consumers = self.consumers()
        ahead = fakes.make_action_payload(
            generated_at=NOW + datetime.timedelta(seconds=MAX_SKEW + 1))
        consumers.collector.info({}, 'agent', actions.ACTION_EVENT_TYPE,
                                 ahead, {})
        self.assertEqual(
            1, consumers.collector.counters[report_wire.REFUSED_FUTURE])
        within = fakes.make_action_payload(
            generated_at=NOW + datetime.timedelta(seconds=MAX_SKEW))
        consumers.collector.info({}, 'agent', actions.ACTION_EVENT_TYPE,
                                 within, {})
        self.assertEqual(1, consumers.collector.counters['actions_stored'])


# -- 4. the fuzz: 2,000 reports through both consumers ----------------

SEED = 32
REPORTS = 2000

NAME_PLACES = (((), 'host'), ((), 'hypervisor_hostname'),
               ((), 'agent_version'), (('nics', 0), 'name'),
               (('nics', 0), 'physnet'), (('nics', 0), 'bridge'))
NAME_VARIANTS = (
    lambda b: b + '\n', lambda b: '\n' + b, lambda b: b + '\r\n',
    lambda b: b + '\x00', lambda b: b + '\x7f', lambda b: b + '\x9f',
    lambda b: b + '\n' + b, lambda b: '', lambda b: (b + '-' * 300)[:256],
    # Names that are names.
    lambda b: b + ' ', lambda b: '\u00e9' + b, lambda b: b + '\u2028',
    lambda b: (b + '-' * 300)[:255])
KEY_VARIANTS = NodeKeysTest.CANONICAL + NodeKeysTest.OTHERS
NUMBER_PLACES = (((), 'seq'), ((), 'period'), (('numa_nodes', 0), 'id'),
                 (('numa_nodes', 0), 'cpu_load'),
                 (('numa_nodes', 0), 'floating_load'),
                 (('numa_nodes', 0), 'memory_total_mb'),
                 (('numa_nodes', 0), 'memory_free_mb'),
                 (('instances', 0), 'io_rate'),
                 (('instances', 0), 'cpu_wait'),
                 (('nics', 0), 'speed_mbps'))
NUMBERS = (10 ** 400, -10 ** 400, 10 ** 4400, 10 ** 308, 2 ** 63,
           2 ** 63 - 1, 2 ** 64, -1, 0, 1, 0.5, 1.0, -0.0, 1e308, 5e-324,
           float('inf'), float('-inf'), float('nan'))
# Stands for a number written into JSON text as it is, "1e400".
JSON_LITERAL_SENTINEL = 0.918273645
JSON_LITERALS = ('1e400', '-1e400', '1E+999', 'NaN', 'Infinity',
                 '-Infinity', '1e-400', '0e0', '1.0', '-0')


def _times():
    """Texts of times: some RFC 3339 and fine, many not."""
    moment = NOW - datetime.timedelta(minutes=5)
    plain = moment.strftime('%Y-%m-%dT%H:%M:%S')
    ahead = (NOW + datetime.timedelta(seconds=MAX_SKEW + 1)).strftime(
        '%Y-%m-%dT%H:%M:%SZ')
    just = (NOW + datetime.timedelta(seconds=MAX_SKEW)).strftime(
        '%Y-%m-%dT%H:%M:%SZ')
    east = (moment + datetime.timedelta(hours=5, minutes=30)).strftime(
        '%Y-%m-%dT%H:%M:%S+05:30')
    return (plain + 'Z', plain + '+00:00', plain + '-00:00', east,
            plain + '.5Z', plain + '.123456Z', just, '1970-01-01T00:00:00Z',
            '2001-09-09T01:46:40Z',
            plain, plain + '.1234567Z', plain + ',5Z', plain + '.Z',
            plain + 'z', plain.replace('T', ' ') + 'Z',
            plain.replace('T', 't') + 'Z', plain + '+05', plain + '+0530',
            plain + '+00:00:30', plain + '+24:00', plain + '\n',
            ' ' + plain + 'Z', plain + 'Z ', ahead, '9999-12-31T23:59:59Z',
            '9999-12-31T23:59:59-01:00', '0001-01-01T00:00:00+01:00',
            '0001-01-01T00:00:00Z', '1969-12-31T23:59:59Z',
            '2026-02-29T08:00:00Z', '2026-11-22T24:00:00Z',
            '2026-12-31T23:59:60Z', '2026-W47-7T08:00:00Z',
            '2026-326T08:00:00Z', '20261122T080000Z', '2026-11-22',
            '\uff12\uff10\uff12\uff16-11-22T08:00:00Z', 'yesterday', '')


TIMES = _times()
TIME_CHARACTERS = '0123456789:-+TZ .,\nz\u0661'
WRONG_TYPES = (None, True, False, 0, 1, -1, 1.5, [], {}, [1], {'a': 1},
               [None], ['x'])
SIGNATURE_VALUES = SignatureTest.VALUES + ('a' * 64, 64, None, ['a'])


GENERATED_AT = report_obj.NumaHostReport.fields['generated_at']


@functools.lru_cache(maxsize=None)
def _shape(node_count, instance_count):
    """A fuzzed report's primitive before its own values are put in."""
    return primitive(node_count=node_count, instances=[
        report_factory.make_instance(memory_mb_per_node={'0': 256},
                                     vcpu_cpus=[0])
        for _ in range(instance_count)])


class FuzzedReports:
    """2,000 reports as the bus could carry them, from one seed.

    Each is valid or spoiled in one field by one class of defect the
    probe found: names, node keys, numbers, times, wrong types, removed
    fields, signatures. Host names carry the report's index, so no
    report's fate depends on another's.
    """

    CLASSES = ('valid', 'name', 'key', 'number', 'literal', 'time',
               'time typo', 'type', 'removed', 'signature', 'wrong secret',
               'unsigned')

    def __init__(self, seed=SEED):
        self.rng = random.Random(seed)

    def __iter__(self):
        for index in range(REPORTS):
            yield self.make(index)

    def make(self, index):
        """(payload, secured, class, description) of report ``index``."""
        rng = self.rng
        how = rng.choice(self.CLASSES)
        payload = self.base(index)
        spoil = getattr(self, 'spoil_' + how.replace(' ', '_'), None)
        what = spoil(payload, index) if spoil else ''
        secured = how in ('signature', 'wrong secret', 'unsigned') or (
            rng.random() < 0.5)
        payload, signing_note = self.sign(payload, how, secured)
        return (payload, secured, how,
                f'#{index} {how}: {what}{signing_note}')

    def base(self, index):
        rng = self.rng
        node_count = rng.randint(1, 4)
        uuids = [str(uuid.UUID(int=rng.getrandbits(128), version=4))
                 for _ in range(rng.randint(1, 2))]
        generated_at = NOW - datetime.timedelta(
            seconds=rng.randint(-MAX_SKEW, 3600))
        seq = rng.randint(0, 2 ** 63 - 1)
        boot_id = rng.choice((report_factory.BOOT_ID, None))
        # The primitive of make_report(host=..., node_count=node_count,
        # instances=[make_instance(uuid=..., memory_mb_per_node={'0': 256},
        # vcpu_cpus=[0]), ...], seq=seq, generated_at=generated_at,
        # boot_id=boot_id): its shape's primitive, built once, with this
        # report's values put in. Building and dumping the objects anew
        # for each of 2,000 reports took a fifth of the test.
        payload = copy.deepcopy(_shape(node_count, len(uuids)))
        data = payload[DATA]
        data.update(host=f'fuzz-{index}',
                    hypervisor_hostname=f'fuzz-{index}.example.org',
                    seq=seq, boot_id=boot_id,
                    generated_at=GENERATED_AT.to_primitive(
                        None, 'generated_at', generated_at))
        for instance, value in zip(data['instances'], uuids):
            instance[DATA]['uuid'] = value
        return payload

    def spoil_name(self, payload, index):
        path, name = self.rng.choice(NAME_PLACES)
        data = data_of(payload, *path)
        data[name] = self.rng.choice(NAME_VARIANTS)(
            data[name] or f'name-{index}')
        return f'{path} {name}={data[name]!r:.40}'

    def spoil_key(self, payload, index):
        key = self.rng.choice(KEY_VARIANTS)
        memory = data_of(payload, 'instances', 0)['memory_mb_per_node']
        if self.rng.random() < 0.5:
            memory.clear()
        memory[key] = 256
        return f'memory key {key!r:.20}'

    def spoil_number(self, payload, index):
        path, name = self.rng.choice(NUMBER_PLACES)
        value = self.rng.choice(NUMBERS)
        data_of(payload, *path)[name] = value
        return f'{path} {name}={validation.shown(value, 20)}'

    def spoil_literal(self, payload, index):
        path, name = self.rng.choice(NUMBER_PLACES)
        data_of(payload, *path)[name] = JSON_LITERAL_SENTINEL
        return f'{path} {name} as JSON text '

    def spoil_time(self, payload, index):
        text = self.rng.choice(TIMES)
        payload[DATA]['generated_at'] = text
        return f'generated_at={text!r}'

    def spoil_time_typo(self, payload, index):
        text = list(payload[DATA]['generated_at'])
        text[self.rng.randrange(len(text))] = self.rng.choice(
            TIME_CHARACTERS)
        payload[DATA]['generated_at'] = ''.join(text)
        return f'generated_at={payload[DATA]["generated_at"]!r}'

    def spoil_type(self, payload, index):
        path = self.rng.choice(hostile_reports._places(payload))
        # A string unique to the report: a host renamed "x" twice would
        # make two reports one host's.
        value = self.rng.choice(WRONG_TYPES + (str(index),))
        _parent(payload, path)[path[-1]] = value
        return f'{path}={validation.shown(value)}'

    def spoil_removed(self, payload, index):
        path = self.rng.choice([p for p in hostile_reports._places(payload)
                                if isinstance(p[-1], str)])
        del _parent(payload, path)[path[-1]]
        return f'{path} removed'

    def sign(self, payload, how, secured):
        """The payload as sent, and a note of how it was signed."""
        if how == 'unsigned' or not secured and self.rng.random() < 0.5:
            return self.as_sent(payload, how), ''
        try:
            sent = signing.sign(payload, 'stolen' if how == 'wrong secret'
                                else SECRET)
        except ValueError:
            # NaN, infinity, an integer past what JSON text holds: no
            # signer can sign it; it can still be sent unsigned.
            return self.as_sent(payload, how), ' (unsignable)'
        if how == 'signature':
            value = self.rng.choice(SIGNATURE_VALUES)
            sent[signing.SIGNATURE_KEY]['value'] = value
            return self.as_sent(sent, how), f' signature {value!r:.20}'
        return self.as_sent(sent, how), ''

    def as_sent(self, payload, how):
        if how != 'literal':
            return payload
        text = json.dumps(payload)
        return text.replace(repr(JSON_LITERAL_SENTINEL),
                            self.rng.choice(JSON_LITERALS))


def _parent(payload, path):
    for key in path[:-1]:
        payload = payload[key]
    return payload


def _plain(report):
    """A report object as ``load_report_data`` gives one: plain dicts."""
    return {name: ([_plain(child) for child in getattr(report, name)]
                   if name in report.CHILDREN else getattr(report, name))
            for name in report.fields}


def _floating_counted(row_node):
    """(count, load) of a stored node's CPUs for floating guests."""
    cpus, load = report_obj.floating_capacity(row_node)
    return len(cpus), 0.0 if load is None else load


class FuzzTest(EdgeTestCase):
    """4. Both consumers keep exactly the same of 2,000 crafted reports."""

    def test_both_consumers_keep_the_same_reports_with_equal_values(self):
        secured = self.consumers((SECRET,))
        open_ = self.consumers(())
        kept_by = {'cache': set(), 'collector': set()}
        outcomes = collections.Counter()
        for index, example in enumerate(FuzzedReports()):
            payload, is_secured, kind, how = example
            consumers = secured if is_secured else open_
            kept, dropped, counted = consumers.offer(payload)
            stored = counted['reports_stored'] == 1
            if kept:
                kept_by['cache'].add(index)
            if stored:
                kept_by['collector'].add(index)
            self.assertEqual(kept, stored, f'{how}: {dict(counted)}')
            self.assertEqual(1, sum(counted.values()), how)
            self.assertNotIn(report_wire.REFUSED_UNEXPECTED, counted, how)
            if kept:
                self.assertSameValues(consumers, payload, how)
            else:
                self.assertEqual(set(dropped), set(counted), how)
            outcomes[kind, kept] += 1
        self.assertEqual(kept_by['cache'], kept_by['collector'])
        self.assertNotIn('internal error', secured.cache.dropped)
        # Neither vacuous nor lopsided: each class both kept and refused
        # reports, bar the ones that cannot be kept.
        for how in FuzzedReports.CLASSES:
            self.assertGreater(outcomes[how, False] + outcomes[how, True],
                               50, how)
            if how not in ('signature', 'wrong secret', 'unsigned',
                           'literal'):
                self.assertGreater(outcomes[how, True], 0, how)
            if how != 'valid':
                self.assertGreater(outcomes[how, False], 0, how)
        self.assertEqual(0, outcomes['valid', False])
        self.assertNoTraceback()

    def assertSameValues(self, consumers, payload, how):
        """What the cache holds is what the collector stored."""
        secrets = consumers.secrets
        data = report_wire.check_payload(copy.deepcopy(payload), MAX_BYTES,
                                         secrets)
        _, report = records.parse_payload(
            report_obj.EVENT_TYPE, copy.deepcopy(payload), MAX_BYTES,
            secrets)
        self.assertEqual(data, _plain(report), how)
        summary = consumers.cache.get((data['host'],
                                       data['hypervisor_hostname']))
        row = consumers.storage.get_host(data['host'])
        self.assertEqual(
            (summary.seq, summary.boot_id, summary.generated_at),
            (row['seq'], row['boot_id'],
             row['generated_at'].replace(tzinfo=UTC).timestamp()), how)
        self.assertEqual(
            [(node.id, node.floating_cpus, node.floating_load, node.free_mb,
              node.total_mb)
             for node in summary.nodes],
            [(node['id'], *_floating_counted(node), node['memory_free_mb'],
              node['memory_total_mb'])
             for node in row['numa_nodes']], how)
