"""Why an action on the host did not happen, in the agent's own terms."""


class AgentError(Exception):
    pass


class ConnectionLost(AgentError):
    """libvirtd is gone; reconnect with backoff, decide nothing meanwhile."""


class DomainGone(AgentError):
    """The domain vanished (deleted, migrated away) between observe and act."""


class NotEnforceable(AgentError):
    """The host refused: EPERM, an unsupported or invalid operation."""


class PageMigrationUnavailable(NotEnforceable):
    """This backend cannot move pages yet (no CAP_PAGE_MIGRATION)."""
