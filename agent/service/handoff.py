"""What the agent hands the libvirt driver extension each period.

Each node's measured load, as the period's report gives it to the
scheduler (the floating CPUs' load where the report has it, else the
whole node's), written beside the uplinks
(:func:`nova_numa_policy.contracts.topology.node_loads_path`). The driver
extension reads it when a ``home`` guest boots
(:func:`nova_numa_policy.virt.driver.measured_loads`), so the node it
binds the guest to is the least loaded by the same measure the
scheduler's weighers ranked, not only the one with most free memory.
"""

import time

from nova_numa_policy.contracts import topology

from agent.sensors import discovery


def node_loads(report):
    """``{node id: load}`` of the report's nodes that have CPUs: pure."""
    return {node.id: (node.floating_load if node.floating_load is not None
                      else node.cpu_load)
            for node in report.numa_nodes if node.cpus}


def node_loads_writer(uplinks_file, clock=time.time):
    """A callable writing each report's node loads; None without a file."""
    path = topology.node_loads_path(uplinks_file)
    if path is None:
        return None

    def write(report):
        discovery.write_for_driver(
            path, topology.render_node_loads(node_loads(report), clock(),
                                             report.period),
            'the node loads', 'it chooses home nodes by free memory')
    return write
