"""HTML of the load bars and NIC locality cells, escaped by format_html.

Bars are plain HTML/CSS: a track and a fill whose width is the value and
whose class gives the colour, so they need no script to show.
"""

from django.utils import html

# cpu_load thresholds of the bar colours; the same three bands the CSS
# colours: ok (green), busy (amber), hot (red).
BUSY = 0.6
HOT = 0.85


def load_class(fraction):
    if fraction >= HOT:
        return 'numa-hot'
    if fraction >= BUSY:
        return 'numa-busy'
    return 'numa-ok'


def _percent(fraction):
    return round(max(0.0, min(1.0, fraction)) * 100)


def bar(fraction, css_class, title):
    return html.format_html(
        '<span class="numa-bar" title="{}"><span class="numa-fill {}" '
        'style="width: {}%"></span></span>', title, css_class,
        _percent(fraction))


def used_fraction(node):
    total = node['memory_total_mb']
    return (total - node['memory_free_mb']) / total if total else 0.0


def tiered(nodes):
    """Whether a host says some node's memory is on a lower tier.

    ``memory_tier`` None (not said: an agent before report 1.8, a kernel
    without tiers) means the top tier, 0; a host whose nodes are all
    there shows no tiers at all.
    """
    return any(node.get('memory_tier') for node in nodes)


def tier_text(node):
    tier = node.get('memory_tier') or 0
    return f'tier {tier}' + (' (top)' if tier == 0 else '')


DEMOTION_TEXT = {True: 'on', False: 'off', None: 'not said'}


def demotion_text(host):
    """Whether the kernel demotes pages to a lower tier, as said."""
    return DEMOTION_TEXT[host.get('memory_demotion')]


def node_line(node, tier=False):
    """One node: CPU load bar, memory use bar, the NICs attached to it.

    With ``tier``, a label of the node's memory tier after its name.
    """
    load = node['cpu_load']
    used = used_fraction(node)
    return html.format_html(
        '<div class="numa-node" data-node="{}"><span class="numa-label">'
        'node {}</span>{}{} <span class="numa-value">{}%</span>{} '
        '<span class="numa-value">{}% mem</span>'
        '<span class="numa-nics">{}</span></div>',
        node['id'], node['id'],
        label(tier_text(node), 'default numa-tier') if tier else '',
        bar(load, load_class(load), f'CPU load {_percent(load)} %'),
        _percent(load),
        bar(used, 'numa-mem', f'memory used {_percent(used)} %'),
        _percent(used), ', '.join(node['nics']))


def nodes_cell(host):
    tier = tiered(host['numa_nodes'])
    return html.format_html_join('', '{}', (
        (node_line(node, tier),) for node in host['numa_nodes']))


def nic_text(nic):
    where = ('no NUMA node' if nic['numa_node'] is None
             else f"node {nic['numa_node']}")
    extras = [f"{nic['speed_mbps'] // 1000} Gb/s"
              if nic['speed_mbps'] else None, nic['physnet']]
    extra = ', '.join(e for e in extras if e)
    return f"{nic['name']} \u2192 {where}" + (f' ({extra})' if extra else '')


def nics_cell(host):
    return html.format_html_join(
        '', '<div class="numa-nic">{}</div>',
        ((nic_text(nic),) for nic in host['nics'])) or '-'


def memory_cell(instance):
    """Stacked bar of an instance's memory by node, then the numbers."""
    per_node = sorted(instance['memory_mb_per_node'].items(),
                      key=lambda kv: int(kv[0]))
    total = sum(mb for _node, mb in per_node) or 1
    segments = html.format_html_join('', (
        '<span class="numa-seg numa-seg-{}" style="width: {}%" '
        'title="node {}: {} MiB"></span>'), (
        (int(node) % 8, round(mb * 100 / total), node, mb)
        for node, mb in per_node))
    text = ', '.join(f'node {node}: {mb} MiB' for node, mb in per_node)
    return html.format_html(
        '<span class="numa-bar numa-stack">{}</span> <span>{}</span>',
        segments, text or '-')


STATUS_LABELS = {True: ('applied', 'success'),
                 False: ('not applied', 'danger'),
                 None: ('none requested', 'default')}
OUTCOME_LABELS = {'applied': 'success', 'failed': 'danger',
                  'dry_run': 'info'}


def label(text, kind):
    return html.format_html('<span class="label label-{}">{}</span>', kind,
                            text)


def policy_status_cell(instance):
    return label(*STATUS_LABELS[instance['policy_applied']])


def outcome_cell(action):
    outcome = action['outcome']
    return label(outcome, OUTCOME_LABELS.get(outcome, 'default'))
