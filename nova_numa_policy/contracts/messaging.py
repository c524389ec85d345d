"""The exchange our services and nova share on the message bus."""

import oslo_messaging

# nova's services send and listen on the "nova" exchange (nova sets it as
# oslo.messaging's default control_exchange); the scheduler's report cache
# runs inside nova-scheduler. Our own services default to the same
# exchange, or agents and the scheduler would not hear each other.
NOVA_EXCHANGE = 'nova'


def use_nova_exchange():
    """Make nova's exchange the default; call before parsing config."""
    oslo_messaging.set_transport_defaults(control_exchange=NOVA_EXCHANGE)
