"""The read-only REST API over the collector database (``/v1``)."""
