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


# libvirt keeps a domain in these states while a job of its own holds
# it: starting it, or bringing it in by migration (and, on the source,
# the last moment of sending it away). A call that needs the domain's
# QEMU monitor, as ioThreadInfo does, waits for that job's end, 30 s at
# most in libvirt's qemu driver, and then fails.
_HELD_BY_LIBVIRT = frozenset({
    (libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_STARTING_UP),
    (libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_PAUSED_MIGRATION),
})


def held_by_libvirt(state):
    """Whether ``dom.state()``'s (state, reason) is a start or migration."""
    return tuple(state) in _HELD_BY_LIBVIRT


def cpumap(cpus, size):
    return tuple(cpu in cpus for cpu in range(size))


def cpus_from_map(bits):
    return frozenset(i for i, on in enumerate(bits) if on)


def io_threads(dom):
    """``[(id, CPUs)]`` of the running guest's QEMU I/O threads."""
    return [(iothread, cpus_from_map(bits)) for iothread, bits in
            dom.ioThreadInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE) or ()]


def emulator_affinity(dom):
    """The CPUs the running guest's emulator threads may run on.

    QEMU's I/O threads count among them, as nova counts them (it pins
    ``<iothreadpin>`` with ``<emulatorpin>``): an I/O thread left on
    other CPUs than the emulator's makes the union differ from any one
    pin, and the agent pins both again.
    """
    emulator = cpus_from_map(dom.emulatorPinInfo(
        libvirt.VIR_DOMAIN_AFFECT_LIVE) or ())
    return emulator.union(*(cpus for _, cpus in io_threads(dom)))


def call(connection, what, func, *args):
    """``func(*args)``, a libvirt error translated (:func:`translate`)."""
    try:
        return func(*args)
    except libvirt.libvirtError as exc:
        raise translate(connection, exc, what)
