"""``numa-policy-lab sandbox``: the whole system on one machine.

nova's services and real placement in process, RabbitMQ for the agents'
reports, one agent per compute on the simulated backend, the collector
and the REST API on SQLite. See doc/source/sandbox.rst.
"""

import os

CAPTURE_VARIABLES = ('OS_STDOUT_CAPTURE', 'OS_STDERR_CAPTURE',
                     'OS_LOG_CAPTURE', 'OS_TEST_TIMEOUT')


def threading_mode():
    """Run nova in native threading mode, before nova is first imported.

    Importing nova's functional helpers applies eventlet monkey patching
    unless told otherwise; the sandbox's own threads (agents' senders, the
    collector's listener, the API server) are plain threads and stay so.
    Deciding here, before ``nova.tests.fixtures`` is imported, also keeps
    a library it imports from loading eventlet first, which nova refuses.
    """
    os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', '1')
    # nova's test fixtures capture stdout, stderr and logging when these
    # are set (tox sets them for test runs): the sandbox's progress and
    # summary would vanish into the capture. They are for test processes,
    # not for a command a user runs.
    for name in CAPTURE_VARIABLES:
        os.environ.pop(name, None)
    from nova import monkey_patch
    monkey_patch.patch()
