"""Why an action on the host did not happen, in the agent's own terms."""


class AgentError(Exception):
    pass


class ConnectionLost(AgentError):
    """libvirtd is gone; reconnect with backoff, decide nothing meanwhile.

    ``reason`` is libvirt's own words; ``retry_in`` the seconds until the
    connection tries again.
    """

    def __init__(self, message, reason=None, retry_in=0.0):
        super().__init__(message)
        self.reason = reason or message
        self.retry_in = retry_in


class DomainGone(AgentError):
    """The domain vanished (deleted, migrated away) between observe and act."""


class NotEnforceable(AgentError):
    """The host refused: EPERM, an unsupported or invalid operation."""


class PageMigrationUnavailable(NotEnforceable):
    """This backend cannot move pages yet (no CAP_PAGE_MIGRATION)."""
