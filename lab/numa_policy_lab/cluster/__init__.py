"""A cluster of simulated NUMA hosts fed by a stream of VM arrivals.

Placement evidence: every arrival is placed by a strategy (the real
scheduler plugins' pure scoring fed by simulated agents' reports, nova's
defaults, a static NUMA-aware vSwitch configuration, a numad-like
placement, random), each host's agent runs its loops or not, and the
result is compared with a reference, the best static placement
(``optimum`` solves that offline problem; loops that move pages and vCPUs
may beat it), and with an upper bound (``bound``, from the model; nothing may
beat it). ``guests`` describes what arrives, ``hosts`` adapts the
simulator, ``nova`` models nova's own filters and weighers,
``strategies`` places, ``simulation`` runs the stream and ``evidence``
turns runs into the numbers of ``doc/source/results.rst``.
"""
