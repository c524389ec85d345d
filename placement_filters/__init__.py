"""Nova scheduler filters and weighers of nova-numa-policy.

Enable them in nova.conf (see doc/source/scheduler.rst)::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = placement_filters.all_filters
    enabled_filters = ...,NumaFilter
    weight_classes = nova.scheduler.weights.all_weighers,
                     placement_filters.combined_weighers

``NumaFilter`` and ``NumaWeigher`` do the work of the three individual
filters and the two individual weighers at a fraction of nova's per-class
cost; enable one set or the other, never both.
"""


def all_filters():
    """Every filter class of this package (nova's ``all_filters`` idiom)."""
    from placement_filters import filters
    return [filters.NumaPolicyFilter, filters.NumaNicLocalityFilter,
            filters.NumaNodeLoadFilter, filters.NumaFilter]


def all_weighers():
    """The individual weighers.

    ``weight_classes`` enables every class a loader returns, so the
    combined weigher has a loader of its own.
    """
    from placement_filters import weights
    return [weights.NumaNicLocalityWeigher, weights.NumaNodeLoadWeigher]


def combined_weighers():
    """The one weigher that replaces both of :func:`all_weighers`."""
    from placement_filters import weights
    return [weights.NumaWeigher]
