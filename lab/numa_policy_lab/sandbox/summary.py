"""Pure: the run's records in, the summary (a dict) and its text out."""

import statistics

from nova_numa_policy.contracts import locality
from nova_numa_policy.contracts import policy as numa_policy

CHOSEN_WEIGHTS = ('NumaNicLocalityWeigher', 'NumaNodeLoadWeigher')
# Carrefour's default carrefour_min_local_ratio: a guest this local has
# nothing to gain from its page moves.
LOCAL_ENOUGH = 0.80


def _fmt(value):
    return '-' if value is None else f'{value:.2f}'


def explanation_record(explanations):
    """The scheduler plugins' view of every host, as plain data."""
    return {
        e.host: {
            'passed': e.passed,
            'report_age_s': (None if e.report_age is None
                             else round(e.report_age, 1)),
            'failures': {name: v.reason
                         for name, v in e.failures().items()},
            'reasons': {name: v.reason for name, v in e.verdicts.items()},
            'weights': {name: (None if w is None else round(float(w), 3))
                        for name, w in e.weights.items()},
        } for e in explanations}


def why(chosen, hosts):
    """One sentence: why the chosen host, from the plugins' view."""
    if chosen is None:
        failed = [f'{h} ({", ".join(v["failures"].values())})'
                  for h, v in sorted(hosts.items()) if not v['passed']]
        return 'not placed; ' + ('filtered out: ' + '; '.join(failed)
                                 if failed else 'nova found no valid host')
    mine = hosts.get(chosen)
    if mine is None:
        return f'{chosen} had no report; nova decided alone'
    weights = [(name, mine['weights'][name]) for name in CHOSEN_WEIGHTS
               if mine['weights'].get(name) is not None]
    failed = {h: v['failures'] for h, v in hosts.items() if not v['passed']}
    parts = []
    if weights:
        best = [name.replace('Numa', '').replace('Weigher', '').lower()
                + f' {w:.2f}' + (' (best)' if _is_best(hosts, name, w)
                                 else '')
                for name, w in weights]
        parts.append('weights ' + ', '.join(best))
    else:
        parts.append('our weighers are neutral for this flavor (nova\'s '
                     'own weighers decided)')
    if failed:
        parts.append('filtered out: ' + '; '.join(
            f'{h} ({", ".join(r for r in f.values())})'
            for h, f in sorted(failed.items())))
    return '; '.join(parts)


def _is_best(hosts, name, value):
    values = [v['weights'].get(name) for v in hosts.values() if v['passed']]
    values = [v for v in values if v is not None]
    return len(set(values)) > 1 and value >= max(values)


def throughput(series):
    """Before (first period, as booted) and after (last half) of a VM."""
    if not series:
        return {'before': None, 'after': None, 'gain': None}
    before = series[0]
    after = statistics.fmean(series[len(series) // 2:])
    return {'before': round(before, 4), 'after': round(after, 4),
            'gain': round(after / before, 3) if before else None}


def in_force(requested, applied, auto_choice):
    """Whether what ``requested`` asks for is in force on the host.

    The agent's report says what is in force (``applied``, as the
    collector stores it), the loops' part included: ``+carrefour`` only
    while the carrefour loop acts, for ``auto`` the policy the auto loop
    chose. None when nothing was asked.
    """
    if requested is None:
        return None
    if numa_policy.POLICIES[requested].auto:
        return auto_choice is not None and applied == auto_choice
    return applied == requested


def measurement(inst, topology):
    """What the agent last measured of a guest's locality: plain data."""
    if inst is None:
        return None
    share = None
    if inst.accesses_per_node is not None:
        share = locality.local_fraction(
            [topology.node_of_cpu(cpu) for cpu in inst.vcpu_cpus],
            inst.accesses_per_node)
    return {'signal': inst.access_signal,
            'local_share': None if share is None else round(share, 3),
            'cpu_wait': None if inst.cpu_wait is None
            else round(inst.cpu_wait, 3),
            'memory_mode': inst.memory_mode,
            'hands_off': inst.hands_off_reason}


def held_back(actions, measured):
    """Why the loops did nothing for a server; None when they acted."""
    if actions:
        return None
    if measured is None:
        return 'not on a compute the sandbox runs'
    if measured['hands_off']:
        return f"left alone: {measured['hands_off']}"
    if measured['signal'] is None:
        if not locality.kernel_balances_memory(measured['memory_mode']):
            return (f"libvirt set its memory policy at boot "
                    f"({measured['memory_mode']}), which the kernel never "
                    f"samples: nothing measured to act on, nothing the "
                    f"policy asks of the loops")
        return 'nothing measured for it yet'
    share = measured['local_share']
    accesses = ('sampled accesses' if locality.is_sampled(measured['signal'])
                else 'accesses')
    if share is not None and share >= LOCAL_ENOUGH:
        return (f"already local: {share:.0%} of its {accesses} on "
                f"its vCPUs' nodes")
    return (f"{'-' if share is None else format(share, '.0%')} of its "
            f"{accesses} local, and no loop's threshold was crossed")


def server_record(boot, api_instance, series, actions, auto_choice,
                  measured=None):
    """Everything the summary says about one server."""
    api_instance = api_instance or {}
    return {
        'name': boot['name'], 'uuid': boot['uuid'],
        'flavor': boot['flavor'], 'extra_specs': boot['extra_specs'],
        'profile': boot['profile'], 'status': boot['status'],
        'host': boot['host'], 'why': why(boot['host'], boot['hosts']),
        'scheduler_view': boot['hosts'],
        'requested_policy': api_instance.get('requested_policy'),
        'applied_policy': api_instance.get('applied_policy'),
        # The collector API's own verdict, and the sandbox's (in_force).
        'policy_applied': api_instance.get('policy_applied'),
        'policy_in_force': in_force(
            api_instance.get('requested_policy'),
            api_instance.get('applied_policy'), auto_choice),
        'auto_choice': auto_choice,
        'memory_mb_per_node': api_instance.get('memory_mb_per_node'),
        'actions': actions,
        'signal': measured['signal'] if measured else None,
        'local_share': measured['local_share'] if measured else None,
        'cpu_wait': measured['cpu_wait'] if measured else None,
        'held_back': held_back(actions, measured),
        'throughput': throughput(series),
    }


def verdict(servers):
    """(ok, problems): every server placed and its policy applied."""
    problems = []
    for s in servers:
        if s['status'] != 'ACTIVE' or not s['host']:
            problems.append(f"{s['name']} not placed ({s['status']})")
        elif (s['requested_policy'] is None
              and dict(s['extra_specs']).get('hw:numa_policy')):
            problems.append(f"{s['name']}: not in the collector's API")
        elif s['policy_in_force'] is False:
            problems.append(f"{s['name']}: {s['requested_policy']} asked, "
                            f"{s['applied_policy']} applied")
    return not problems, problems


def action_totals(api_actions):
    by_kind, by_loop = {}, {}
    for action in api_actions:
        by_kind[action['kind']] = by_kind.get(action['kind'], 0) + 1
        loop = action['reason'].split(':', 1)[0]
        by_loop[loop] = by_loop.get(loop, 0) + 1
    return {'total': len(api_actions), 'by_kind': by_kind,
            'by_loop': by_loop}


def mean_throughput(servers, key):
    values = [s['throughput'][key] for s in servers
              if s['throughput'][key] is not None]
    return round(statistics.fmean(values), 4) if values else None


def format_text(summary):
    lines = ['', f"NUMA policy sandbox: {summary['mode']} run, "
             f"{len(summary['computes'])} computes, "
             f"{len(summary['servers'])} servers, "
             f"{summary['periods']} agent periods", '']
    for c in summary['computes']:
        lines.append(f"  {c['name']}: {c['nodes']} nodes x "
                     f"{c['cores_per_node']} CPUs, NIC on node "
                     f"{c['nic_node']}, measures {c['signal']}, "
                     f"{c['reports_sent']} reports sent, "
                     f"last stored seq {c['last_report_seq']}")
    lines += ['', f"{'server':14} {'policy':22} {'host':9} {'applied':22} "
              f"{'before':>6} {'after':>6} {'actions':>7}"]
    for s in summary['servers']:
        applied = s['applied_policy'] or '-'
        if s['auto_choice']:
            applied += f" (auto: {s['auto_choice']})"
        lines.append(
            f"{s['name']:14} {s['requested_policy'] or '(none)':22} "
            f"{s['host'] or '-':9} {applied:22} "
            f"{_fmt(s['throughput']['before']):>6} "
            f"{_fmt(s['throughput']['after']):>6} "
            f"{sum(s['actions'].values()):7d}")
        lines.append(f"{'':14} why: {s['why']}")
        lines.append(f"{'':14} measured: " + _measured_text(s))
    a = summary['actions']
    lines += ['', f"Agent actions (from the collector API): "
              f"{a['total']} " + _pairs(a['by_loop']) + ', '
              + _pairs(a['by_kind'])]
    t = summary['throughput']
    lines.append(f"Mean throughput: {_fmt(t['before_mean'])} as booted -> "
                 f"{_fmt(t['after_mean'])} after the loops")
    lines.append('Result: ' + ('OK, every server placed and its policy '
                               'applied' if summary['ok'] else
                               'PROBLEMS: ' + '; '.join(summary['problems'])))
    return '\n'.join(lines) + '\n'


def _measured_text(server):
    signal = server['signal'] or 'nothing'
    if server['local_share'] is not None:
        signal += f", {server['local_share']:.0%} local"
    if server.get('cpu_wait') is not None:
        signal += f", vCPUs waiting for a CPU {server['cpu_wait']:.0%}"
    if server['held_back']:
        return f"{signal}; loops held back: {server['held_back']}"
    return f"{signal}; loops acted"


def _pairs(counts):
    return '(' + ', '.join(f'{k} {v}' for k, v in sorted(counts.items())) \
        + ')' if counts else '(none)'
