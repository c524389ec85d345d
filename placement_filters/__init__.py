"""Nova scheduler filters and weighers of nova-numa-policy.

Enable them in nova.conf (see doc/source/scheduler.rst)::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = placement_filters.all_filters
    enabled_filters = ...,NumaPolicyFilter,NumaNicLocalityFilter,
                      NumaNodeLoadFilter
    weight_classes = nova.scheduler.weights.all_weighers,
                     placement_filters.all_weighers
"""


def all_filters():
    """Every filter class of this package (nova's ``all_filters`` idiom)."""
    from placement_filters import filters
    return [filters.NumaPolicyFilter, filters.NumaNicLocalityFilter,
            filters.NumaNodeLoadFilter]


def all_weighers():
    """Every weigher class of this package."""
    from placement_filters import weights
    return [weights.NumaNicLocalityWeigher, weights.NumaNodeLoadWeigher]
