"""Why-not: for every host, why it passed, failed or how it was weighed.

Pure: a flavor, a snapshot of the report cache and the settings in, one
:class:`HostExplanation` per host out. It runs the same verdict and weight
functions as the scheduler plugins, so it cannot tell a different story.
"""

import dataclasses

from nova_numa_policy.scheduling import scoring

LOAD = 'NumaNodeLoadFilter'
FILTERS = (
    ('NumaPolicyFilter', scoring.policy_verdict),
    ('NumaNicLocalityFilter', scoring.nic_verdict),
    (LOAD, scoring.load_verdict),
)
WEIGHERS = (
    ('NumaNicLocalityWeigher', scoring.nic_weight),
    ('NumaNodeLoadWeigher', scoring.load_weight),
)


@dataclasses.dataclass(frozen=True)
class HostExplanation:
    host: str
    nodename: str
    report_age: float | None  # seconds; None: no report at all
    # The memory-locality signal the host's report names (None: none,
    # or no report).
    locality_signal: str | None
    # Everything the host's report says it measures, sorted.
    measurements: tuple
    verdicts: dict  # filter name -> scoring.Verdict
    # weigher name -> raw weight as the weigher computes it, or None
    # when the weigher gives every host the same weight for this request.
    weights: dict

    @property
    def passed(self):
        return all(v.passed for v in self.verdicts.values())

    def failures(self):
        return {name: v for name, v in self.verdicts.items()
                if not v.passed}


def explain(flavor, snapshot, settings, now, hosts=(), physnets=(),
            image_props=None):
    """Explain the plugins' view of every host for one flavor.

    :param flavor: anything with ``extra_specs``, ``vcpus``, ``memory_mb``.
    :param snapshot: ``{(host, nodename): HostSummary}`` from the cache.
    :param hosts: extra ``(host, nodename)`` keys to explain, typically
        compute nodes without a report.
    :returns: a list of :class:`HostExplanation`, sorted by host.
    """
    request = scoring.make_request(
        flavor.extra_specs, flavor.vcpus, flavor.memory_mb,
        image_props=image_props, physnets=physnets)
    keys = sorted(set(snapshot) | set(hosts))
    summaries = [snapshot.get(key) for key in keys]
    weights = {name: _weights(fn, request, summaries, settings, now)
               for name, fn in WEIGHERS}
    verdicts = set_load_aside([
        {name: fn(request, summary, settings, now)
         for name, fn in FILTERS} for summary in summaries])
    return [
        HostExplanation(
            host=key[0], nodename=key[1],
            report_age=None if summary is None
            else now - summary.generated_at,
            locality_signal=None if summary is None
            else summary.locality_signal,
            measurements=() if summary is None
            else tuple(sorted(summary.measurements)),
            verdicts=verdicts[i],
            weights={name: weights[name][i] for name, _ in WEIGHERS})
        for i, (key, summary) in enumerate(zip(keys, summaries))]


def set_load_aside(verdicts):
    """Every host's verdicts as the filters keep hosts (scoring.keep).

    ``verdicts``: per host, {filter name: verdict}. When no host passes
    the load filter with the others, the load verdicts of the hosts
    that pass the others read ``no-quiet-host``: those hosts are kept.
    """
    kept, aside = scoring.keep([
        (all(v.passed for name, v in by_name.items() if name != LOAD),
         by_name[LOAD].passed) for by_name in verdicts])
    if not aside:
        return verdicts
    return [dict(by_name, **{LOAD: scoring.set_aside(by_name[LOAD])})
            if keep and not by_name[LOAD].passed else by_name
            for by_name, keep in zip(verdicts, kept)]


def _weights(fn, request, summaries, settings, now):
    if not scoring.applies(fn, request, settings):
        return [None] * len(summaries)
    raw = [None if scoring.fresh(s, now, settings) is None
           else fn(request, s, settings) for s in summaries]
    return scoring.neutral_fill(raw)
