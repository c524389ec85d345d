"""Pure scheduling decisions: report summaries, verdicts, weights, why-not.

Nothing here does I/O or imports nova; ``placement_filters`` is the glue
that feeds nova's HostState and RequestSpec in and logs what comes out.
"""
