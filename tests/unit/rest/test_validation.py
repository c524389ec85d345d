from nova_numa_policy.objects import validation as report_validation
from nova_numa_policy.rest import errors
from nova_numa_policy.rest import validation
from tests import base as test_base

UUID = '11111111-1111-4111-8111-111111111111'
PARSERS = {'marker': validation.instance_uuid, 'host': validation.name}


def _query(*pairs):
    return validation.query(list(pairs), PARSERS, max_limit=50,
                            default_limit=20)


class QueryTest(test_base.TestCase):

    def test_no_parameter_gives_the_default_limit(self):
        self.assertEqual({'limit': 20}, _query())

    def test_every_parameter_is_parsed(self):
        self.assertEqual(
            {'limit': 5, 'marker': UUID, 'host': 'compute-1'},
            _query(('limit', '5'), ('marker', UUID.upper()),
                   ('host', 'compute-1')))

    def test_bad_input_is_400_with_what_was_expected(self):
        cases = [
            ('unknown parameter', [('sort', 'x')],
             "unknown query parameter 'sort'; this resource takes host, "
             "limit, marker"),
            ('repeated parameter', [('host', 'a'), ('host', 'b')],
             'query parameter host is repeated'),
            ('limit zero', [('limit', '0')],
             "limit must be an integer from 1 to 50, got '0'"),
            ('limit above max', [('limit', '51')], 'from 1 to 50'),
            ('limit not a number', [('limit', '1e3')], "got '1e3'"),
            ('limit in other digits', [('limit', '\u0663')], 'from 1 to'),
            ('negative limit', [('limit', '-1')], "got '-1'"),
            ('marker not a uuid', [('marker', 'abc')],
             "marker must be a UUID, got 'abc'"),
            ('empty host', [('host', '')],
             'host must be 1 to 255 characters without control'),
            ('control character', [('host', 'a\x00b')], 'control'),
            ('C1 control character', [('host', 'a\x85b')], 'control'),
            ('long host', [('host', 'h' * 256)], "got 'hhhh"),
        ]
        for name, pairs, message in cases:
            with self.subTest(name):
                exc = self.assertRaises(errors.BadRequest, _query, *pairs)
                self.assertIn(message, exc.message)
                self.assertEqual(400, exc.status)

    def test_long_values_are_cut_in_messages(self):
        exc = self.assertRaises(errors.BadRequest, _query,
                                ('host', 'h' * 1000))
        self.assertLess(len(exc.message), 200)

    def test_a_resource_without_parameters_refuses_any(self):
        exc = self.assertRaises(errors.BadRequest, validation.no_query,
                                [('limit', '1')])
        self.assertIn("'limit'; this resource takes none", exc.message)
        self.assertIsNone(validation.no_query([]))


class QueryPairsTest(test_base.TestCase):

    def test_only_ampersands_separate_parameters(self):
        self.assertEqual([('physnet', 'a;b'), ('limit', ''), ('x', 'é')],
                         validation.query_pairs('physnet=a;b&limit&x=%C3%A9'))

    def test_raw_utf8_bytes_as_wsgi_hands_them_over(self):
        latin1 = 'é'.encode('utf-8').decode('latin-1')
        self.assertEqual([('x', 'é')], validation.query_pairs('x=' + latin1))

    def test_a_query_that_is_not_utf8_is_400(self):
        for query in ('x=%ff', '%fe=1', 'x=' + chr(0xff)):
            self.assertRaisesRegex(errors.BadRequest, 'not UTF-8',
                                   validation.query_pairs, query)


class SharedRulesTest(test_base.TestCase):
    """The API names hosts under the rule their reports are checked by."""

    def test_every_name_a_report_may_carry_the_api_accepts(self):
        for value in ('compute-1', 'h' * 255, 'ñode.example.org'):
            self.assertTrue(report_validation.is_name(value), value)
            self.assertEqual(value, validation.name('host', value))

    def test_every_name_a_report_may_not_carry_the_api_refuses(self):
        for value in ('', 'h' * 256, 'c1\x1b[2J', 'c1\u0085'):
            self.assertFalse(report_validation.is_name(value), value)
            self.assertRaises(errors.BadRequest, validation.name, 'host',
                              value)
