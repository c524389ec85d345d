"""libvirt calls as the backend makes them: errors translated, CPU maps.

Every libvirt error becomes one of :mod:`nova_numa_policy.contracts.errors`
so the loop can tell "try again later" (ConnectionLost), "forget it"
(DomainGone) and "cannot here" (NotEnforceable) apart.
"""

import libvirt

from nova_numa_policy.contracts import errors

from agent.backend import connection as connection_mod


def translate(connection, exc, what):
    """The agent's error for libvirt's ``exc`` raised by ``what``."""
    code = exc.get_error_code()
    if code == libvirt.VIR_ERR_NO_DOMAIN:
        return errors.DomainGone(f'{what}: domain is gone')
    if connection_mod.is_connection_error(exc):
        connection.lost(exc)
        return errors.ConnectionLost(f'{what}: {exc}')
    # Anything else is the host refusing this call: an invalid or
    # unsupported operation, or EPERM/EACCES arriving as a system error.
    # Retrying the same call next period would fail the same way.
    return errors.NotEnforceable(f'{what}: {exc}')


def active(dom):
    """Whether the domain runs; a domain libvirt cannot answer for does not."""
    try:
        return dom.isActive() == 1
    except libvirt.libvirtError:
        return False


def cpumap(cpus, size):
    return tuple(cpu in cpus for cpu in range(size))


def cpus_from_map(bits):
    return frozenset(i for i, on in enumerate(bits) if on)
