"""A devstack node inside a lab host: the entry points the test calls.

Each runs in a child of the lab host's server, as root
(``LabHost.call``), so the node is named by its root directory between
calls (:class:`tests.devstack.node.Node`). The tree is laid out on the
lab host's own /tmp, and the phases run as its stack user: the lab
host's /etc is this machine's, where ``tox -e devstack`` made the user.
"""

from tests.devstack import node as node_mod


def lay_out(localrc, nova_conf, devstack_tree):
    """A new node; its root."""
    return node_mod.Node.lay_out(localrc, nova_conf, devstack_tree).root


def run(root, steps):
    node_mod.Node(root).run(*steps)


def facts(root, service):
    return node_mod.Node(root).facts(service)


def log(root):
    return node_mod.tail(node_mod.Node(root).log, 200)


def close(root):
    node_mod.Node(root).close()
