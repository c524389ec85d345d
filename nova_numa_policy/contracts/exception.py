"""Exceptions raised by nova-numa-policy's pure code.

Every exception carries a message written for the operator who typed the
flavor or image property, or who reads the log of the service that dropped a
report.
"""


class NumaPolicyError(ValueError):
    """Base class: the request cannot be honoured as written."""


class InvalidNumaPolicy(NumaPolicyError):
    """An extra spec of ours has a value outside its allowed set."""

    def __init__(self, key, value, allowed):
        self.key = key
        self.value = value
        self.allowed = tuple(allowed)
        super().__init__(
            f"Invalid value '{value}' for '{key}'; allowed values are: "
            f"{', '.join(self.allowed)}.")


class NumaPolicyConflict(NumaPolicyError):
    """A policy or tier choice contradicts a NUMA topology nova owns."""


class ConflictingNumaSpecs(NumaPolicyError):
    """Two of our own extra specs contradict each other on one flavor."""


class UnsupportedImageProperty(NumaPolicyError):
    """An image property asks for something only a flavor can ask for."""


class MalformedReport(ValueError):
    """A HostReport could not be read: wrong shape, version, size or value.

    Consumers catch exactly this type, count the report as dropped and carry
    on; it never escapes into nova.
    """


class OversizedReport(MalformedReport):
    """A HostReport larger than a consumer accepts (bytes or counts)."""


class ReportFromTheFuture(MalformedReport):
    """A HostReport dated further ahead than the allowed clock skew."""


class UnsignedReport(MalformedReport):
    """No signature on a report, where consumers require one."""


class BadSignature(MalformedReport):
    """A report's signature does not match any accepted secret."""
