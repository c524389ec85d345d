"""Why an action on a host did not happen: what a backend's ``apply`` raises.

The real backend (``agent.backend.libvirt_backend``) translates
libvirt's and the kernel's answers into these; the simulated one raises
them when a test makes it fail. The executor
(:mod:`nova_numa_policy.decisions.execution`) decides from the type alone
whether a failed step may need undoing.
"""


class HostError(Exception):
    """Base class: the host did not carry out an action."""


class ConnectionLost(HostError):
    """libvirtd is gone; reconnect with backoff, decide nothing meanwhile.

    ``reason`` is libvirt's own words; ``retry_in`` the seconds until the
    connection tries again.
    """

    def __init__(self, message, reason=None, retry_in=0.0):
        super().__init__(message)
        self.reason = reason or message
        self.retry_in = retry_in


class DomainGone(HostError):
    """The domain vanished (deleted, migrated away) between observe and act."""


class NotEnforceable(HostError):
    """The host refused: EPERM, an unsupported or invalid operation."""


class PageMigrationUnavailable(NotEnforceable):
    """This backend cannot move pages yet (no CAP_PAGE_MIGRATION)."""
