"""Scheduler weighers on agent reports: NIC-local headroom, node headroom.

Raw weights are headroom fractions from pure functions, read from the
host's shared :class:`~nova_numa_policy.scheduling.assess.Assessment`;
nova normalises them and applies the multiplier, which aggregate metadata
may override. Hosts without a fresh report get the median weight (neither
preferred nor avoided); requests a weigher does not care about get the
same weight on every host, which leaves nova's ordering untouched.

``NumaWeigher`` gives both weights as one weigher, which saves nova's
per-weigher overhead on large clouds.
"""

import operator
import threading

from oslo_config import cfg

from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

from nova_numa_policy.scheduling import assess
from nova_numa_policy.scheduling import scoring
from placement_filters import assessors
from placement_filters import base

CONF = cfg.CONF

NIC_MULTIPLIER = 'nic_locality_weight_multiplier'
LOAD_MULTIPLIER = 'node_load_weight_multiplier'


def _configured(name):
    return getattr(CONF.numa_policy_scheduler, name)


def _multiplier(host_state, name, configured):
    # The aggregate lookup walks every aggregate's metadata; without an
    # aggregate it could only return the configured value.
    if not host_state.aggregates:
        return configured
    return scheduler_utils.get_weight_multiplier(host_state, name,
                                                 configured)


# C-level attribute reads: these run for every host of every request.
_WEIGHED_KEY = operator.attrgetter('obj.host', 'obj.nodename')
_AGGREGATES = operator.attrgetter('obj.aggregates')


def _assessments(weighed_obj_list, assessor):
    get = base.cache().get
    return assessors.assess_many(
        assessor, list(map(get, map(_WEIGHED_KEY, weighed_obj_list))),
        base.now())


def _scaled(weights, multiplier):
    """Nova's normalisation times ``multiplier`` as (scale, offset).

    scale * w + offset for each weight w; (0, 0) when every host weighs
    the same, where nova's normalisation gives 0.
    """
    low, high = min(weights), max(weights)
    if low == high:
        return 0.0, 0.0
    scale = multiplier / (high - low)
    return scale, -low * scale


def _raw_weights(assessments, field):
    return scoring.neutral_fill([assessment[field]
                                 for assessment in assessments])


class _ReportWeigher(weights.BaseHostWeigher):
    field = None  # the assess.Assessment field holding the raw weight
    multiplier_name = None

    def __init__(self):
        super().__init__()
        # Per scheduling thread (greenthread under eventlet): the request's
        # multiplier, read once in weigh_objects for nova's per-host
        # weight_multiplier calls; None when every host weighs the same.
        self._request = threading.local()
        base.start_listening()

    def weighs(self, assessor):
        raise NotImplementedError()

    def weight_multiplier(self, host_state):
        # nova asks once per host and weigher: one thread-local read, and
        # the aggregate walk only for hosts in an aggregate.
        configured = getattr(self._request, 'multiplier', False)
        if configured is None:
            return 0.0  # same weight everywhere: nothing to multiply
        if configured is False:  # called without weigh_objects first
            configured = _configured(self.multiplier_name)
        if not host_state.aggregates:
            return configured
        return scheduler_utils.get_weight_multiplier(
            host_state, self.multiplier_name, configured)

    def weigh_objects(self, weighed_obj_list, spec_obj):
        _, assessor = base.assessor_for(spec_obj)
        if not self.weighs(assessor):
            self._request.multiplier = None
            return [0.0] * len(weighed_obj_list)
        self._request.multiplier = _configured(self.multiplier_name)
        return _raw_weights(_assessments(weighed_obj_list, assessor),
                            self.field)

    def _weigh_object(self, host_state, weight_properties):
        # Only reached by callers weighing one host at a time; a single
        # host has nothing to be compared with.
        return 0.0


class NumaNicLocalityWeigher(_ReportWeigher):
    """Prefer hosts where the instance fits on a NIC-local node."""

    field = assess.NIC_WEIGHT
    multiplier_name = NIC_MULTIPLIER

    def weighs(self, assessor):
        return assessor.weighs_nic


class NumaNodeLoadWeigher(_ReportWeigher):
    """Prefer the host whose best-fitting node has the most headroom."""

    field = assess.LOAD_WEIGHT
    multiplier_name = LOAD_MULTIPLIER

    def weighs(self, assessor):
        return assessor.weighs_load


class NumaWeigher(weights.BaseHostWeigher):
    """NumaNicLocalityWeigher and NumaNodeLoadWeigher in one.

    Each weight is normalised over the hosts and multiplied by its own
    multiplier (aggregate metadata still overrides each) exactly as nova
    does for two weighers, and the sum is returned. ``minval``/``maxval``
    make nova's own normalisation of that sum an identity and the
    multiplier is 1.0, so hosts get the scores the two weighers would
    give, with nova's per-weigher cost paid once. Enable either this or
    the two.
    """

    minval = 0.0
    maxval = 1.0
    parts = ((assess.NIC_WEIGHT, NIC_MULTIPLIER, 'weighs_nic'),
             (assess.LOAD_WEIGHT, LOAD_MULTIPLIER, 'weighs_load'))

    def __init__(self):
        super().__init__()
        base.start_listening()

    def weight_multiplier(self, host_state):
        return 1.0  # the multipliers are applied in weigh_objects

    def weigh_objects(self, weighed_obj_list, spec_obj):
        _, assessor = base.assessor_for(spec_obj)
        if not assessor.weighs:
            return [0.0] * len(weighed_obj_list)
        assessments = _assessments(weighed_obj_list, assessor)
        in_aggregate = any(map(_AGGREGATES, weighed_obj_list))
        scores = None
        for field, name, weighs in self.parts:
            if not getattr(assessor, weighs):
                continue
            raw = _raw_weights(assessments, field)
            configured = _configured(name)
            if in_aggregate:
                scale, offset = _scaled(raw, 1.0)
                part = [_multiplier(weighed.obj, name, configured)
                        * (scale * weight + offset)
                        for weighed, weight in zip(weighed_obj_list, raw)]
            else:
                # One multiplier for every host: folded into the scale.
                scale, offset = _scaled(raw, configured)
                part = [scale * weight + offset for weight in raw]
            scores = part if scores is None else list(
                map(operator.add, scores, part))
        return scores

    def _weigh_object(self, host_state, weight_properties):
        return 0.0
