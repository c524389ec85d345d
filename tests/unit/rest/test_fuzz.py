"""Schema-driven fuzzing of the API: no input may produce a 500.

schemathesis generates requests from the served OpenAPI description, both
valid ones (positive) and ones that break it (negative), sends them to the
in-process WSGI app as an admin, and checks every response: never a 5xx,
and a status code, content type and body the description documents.
"""

import hypothesis
from hypothesis import HealthCheck
import testtools

from nova_numa_policy.collector import actions
from tests import base as test_base
from tests.unit.collector import fakes
from tests.unit.rest import base

try:
    import schemathesis
    from schemathesis.generation import GenerationMode
except ImportError:  # pragma: no cover - depends on the environment
    schemathesis = None

# Enough to reach every parameter of every operation in both modes while
# keeping the unit suite quick on a two-core machine.
EXAMPLES = 60


@testtools.skipIf(schemathesis is None,
                  'schemathesis is not installed (pip install schemathesis)')
class FuzzTest(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.api = self.useFixture(base.ApiFixture())
        # compute-2's agent says its memory tiers, compute-1's does not.
        for seq, host, tiers in ((1, 'compute-1', {}),
                                 (2, 'compute-2', dict(tiers={0: 0, 1: 1},
                                                       demotion=False))):
            self.api.storage.store_report(
                fakes.make_report(host=host, seq=seq, **tiers),
                fakes.at(100))
        self.api.storage.store_action(
            actions.load_action(fakes.make_action_payload()), fakes.at(100))
        self.schema = schemathesis.openapi.from_wsgi('/v1/openapi.json',
                                                     self.api.app)

    def _fuzz(self, mode):
        statuses = []

        @hypothesis.settings(max_examples=EXAMPLES, deadline=None,
                             database=None, derandomize=True,
                             suppress_health_check=list(HealthCheck))
        @hypothesis.given(case=self.schema.as_strategy(
            generation_mode=mode, headers=base.ADMIN))
        def check(case):
            response = case.call(headers=base.ADMIN)
            statuses.append(response.status_code)
            self.assertLess(response.status_code, 500,
                            f'{case.method} {case.formatted_path} '
                            f'{case.query}: {response.text}')
            case.validate_response(response)

        check()
        return statuses

    def test_valid_requests_never_fail_and_match_the_description(self):
        statuses = self._fuzz(GenerationMode.POSITIVE)
        # Some generated requests must reach real data, or the fuzzing
        # only ever exercised error paths.
        self.assertIn(200, statuses)

    def test_invalid_requests_are_refused_never_500(self):
        statuses = self._fuzz(GenerationMode.NEGATIVE)
        self.assertIn(400, statuses)
