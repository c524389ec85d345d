from nova_numa_policy.loops import hysteresis
from tests import base as test_base

# (max pin count, proposals, value after each)
CASES = (
    (2, [1, 2, 2, 2], [1, 1, 1, 2]),
    (2, [1, 2, 1, 2, 1, 2], [1, 1, 1, 1, 1, 1]),
    (0, [1, 2, 3], [1, 2, 3]),
    (1, [5, 6, 6, 5, 5], [5, 5, 6, 6, 5]),
)


class PinCountTest(test_base.TestCase):

    def test_cases(self):
        for max_count, proposals, expected in CASES:
            pinned, seen = None, []
            for proposal in proposals:
                pinned = hysteresis.update(pinned, proposal, max_count)
                seen.append(pinned.value)
            self.assertEqual(expected, seen, (max_count, proposals))
