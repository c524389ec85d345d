"""nova's own view of a host: claims, capacity filters, spreading weighers.

Only what every strategy shares with nova: the flavor-sized claims of its
resource tracker, RAM and vCPU capacity (allocation ratios of 1.0, so no
strategy wins by oversubscribing), NUMATopologyFilter's per-cell fit for
guests with ``hw:numa_nodes``, and the weighers' normalisation: each
weigher's raw values are scaled to 0..1 over the candidates (all equal:
all 0), multiplied and summed; the first host of the highest sum wins.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Claimed:
    vcpus: int
    memory_mb: int
    node_vcpus: dict  # host node -> vCPUs claimed by guest cells there
    node_mb: dict


def claimed(host):
    vcpus = mem = 0
    node_vcpus, node_mb = {}, {}
    for n_vcpus, memory_mb, cells in host.claims.values():
        vcpus += n_vcpus
        mem += memory_mb
        for node in cells or ():
            node_vcpus[node] = node_vcpus.get(node, 0) + n_vcpus / len(cells)
            node_mb[node] = node_mb.get(node, 0) + memory_mb / len(cells)
    return Claimed(vcpus, mem, node_vcpus, node_mb)


def fits(host, app):
    """RAM and vCPU capacity (RamFilter/VCPU placement inventories)."""
    c = claimed(host)
    sim = host.host
    return (c.vcpus + app.vcpus <= sim.n_cpus
            and c.memory_mb + app.memory_mb
            <= sim.memory_mb_per_node * sim.n_nodes)


def fit_cells(host, app, required=frozenset()):
    """NUMATopologyFilter for ``hw:numa_nodes`` = the fewest nodes that fit.

    Cells go to the least claimed host nodes (nova's default spreading of
    cells); ``required`` nodes (a NUMA-aware vSwitch's) must hold one.
    Returns the cells' host nodes, or None when the guest does not fit.
    """
    sim = host.host
    count = app.nodes_needed(sim.cpus_per_node)
    c = claimed(host)
    per_vcpus, per_mb = app.vcpus / count, app.memory_mb / count
    room = [n for n in range(sim.n_nodes)
            if c.node_vcpus.get(n, 0) + per_vcpus <= sim.cpus_per_node
            and c.node_mb.get(n, 0) + per_mb <= sim.memory_mb_per_node]
    ranked = sorted(room, key=lambda n: (n not in required,
                                         c.node_vcpus.get(n, 0), n))
    cells = ranked[:count]
    if len(cells) < count or (required and not set(cells) & required):
        return None
    return tuple(sorted(cells))


def normalize(raw):
    low, high = min(raw), max(raw)
    if high == low:
        return [0.0] * len(raw)
    return [(w - low) / (high - low) for w in raw]


def spread_weights(hosts):
    """RAMWeigher + CPUWeigher raw values (free RAM, free vCPUs)."""
    ram, cpu = [], []
    for host in hosts:
        c = claimed(host)
        sim = host.host
        ram.append(sim.memory_mb_per_node * sim.n_nodes - c.memory_mb)
        cpu.append(sim.n_cpus - c.vcpus)
    return [ram, cpu]


def best(candidates, raw_weights, multipliers=None):
    """The index in ``candidates`` nova picks from per-weigher raw values."""
    multipliers = multipliers or [1.0] * len(raw_weights)
    total = [0.0] * len(candidates)
    for mult, raw in zip(multipliers, raw_weights):
        for i, w in enumerate(normalize(raw)):
            total[i] += mult * w
    return max(range(len(candidates)), key=lambda i: (total[i], -i))
