"""Scheduler weighers on agent reports: NIC-local headroom, node headroom.

Raw weights are headroom fractions from pure functions; nova normalises
them and applies the multiplier, which aggregate metadata may override.
Hosts without a fresh report get the median weight (neither preferred nor
avoided); requests a weigher does not care about get the same weight on
every host, which leaves nova's ordering untouched.
"""

import threading

from oslo_config import cfg

from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

from nova_numa_policy.scheduling import scoring
from placement_filters import base

CONF = cfg.CONF


class _ReportWeigher(weights.BaseHostWeigher):
    weight = None  # a scoring.*_weight function
    multiplier_name = None

    def __init__(self):
        super().__init__()
        # Per scheduling thread: whether the request being weighed got the
        # same weight on every host, so its multiplier does not matter.
        self._request = threading.local()
        base.cache()  # start listening before the first request

    def weight_multiplier(self, host_state):
        # nova asks once per host and weigher; skip the aggregate lookup
        # when the result cannot change anything or when there is no
        # aggregate to override the option (the same value either way).
        if getattr(self._request, 'neutral', False):
            return 0.0
        configured = getattr(CONF.numa_policy_scheduler,
                             self.multiplier_name)
        if not host_state.aggregates:
            return configured
        return scheduler_utils.get_weight_multiplier(
            host_state, self.multiplier_name, configured)

    def weigh_objects(self, weighed_obj_list, spec_obj):
        request = base.request_for(spec_obj)
        settings = base.settings()
        weight = type(self).weight
        self._request.neutral = not scoring.applies(weight, request,
                                                    settings)
        if self._request.neutral:
            return [0.0] * len(weighed_obj_list)
        cache, now, ttl = base.cache(), base.now(), settings.ttl
        raw = []
        for weighed in weighed_obj_list:
            summary = cache.get(base.host_key(weighed.obj))
            if summary is None or not summary.is_fresh(now, ttl):
                raw.append(None)
            else:
                raw.append(weight(request, summary, settings))
        return scoring.neutral_fill(raw)

    def _weigh_object(self, host_state, weight_properties):
        # Only reached by callers weighing one host at a time; a single
        # host has nothing to be compared with.
        return 0.0


class NumaNicLocalityWeigher(_ReportWeigher):
    """Prefer hosts where the instance fits on a NIC-local node."""

    weight = scoring.nic_weight
    multiplier_name = 'nic_locality_weight_multiplier'


class NumaNodeLoadWeigher(_ReportWeigher):
    """Prefer the host whose best-fitting node has the most headroom."""

    weight = scoring.load_weight
    multiplier_name = 'node_load_weight_multiplier'
