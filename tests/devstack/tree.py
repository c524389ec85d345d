"""devstack's own tree, pinned, in the lab's cache: where the plugin runs.

tests/devstack/test_with_devstack.py runs the plugin's phases with
devstack's function library, not stand-ins. devstack is published on no
package registry this project installs from (PyPI's ``devstack`` is
another project), and its code is not this project's to commit; so its
tree is unpacked, once, from a git clone of openstack/devstack into the
lab's cache (``<cache>/devstack-<commit>``, the cache of
:mod:`tests.labhost.emulator`), and the tests use it from there with no
network::

    python -m tests.devstack.tree unpack /path/to/devstack/.git

The pin: the commit of devstack's master whose ``DEVSTACK_SERIES`` is
2026.2, the series of nova 34 and placement 16 (constraints.txt);
devstack had no stable/2026.2 branch at that commit. The unpack refuses
a clone without that commit, and a tree whose ``stackrc`` names another
series.
"""

import os
import re
import subprocess
import sys
import tempfile

from tests.labhost import emulator

COMMIT = '493835a61a996731a7031861f80c7629acd5d6f2'
SERIES = '2026.2'


class TreeMissing(Exception):
    """No pinned devstack tree in the lab's cache; says how to make one."""


def tree_dir(cache=None):
    return os.path.join(cache or emulator.cache_dir(),
                        f'devstack-{COMMIT[:8]}')


def series(stackrc_text):
    """The ``DEVSTACK_SERIES`` a stackrc names, or None."""
    found = re.search(r'^DEVSTACK_SERIES="?([^"\s]+)"?', stackrc_text,
                      re.MULTILINE)
    return found.group(1) if found else None


def require(cache=None):
    """The pinned tree's path, or TreeMissing saying how to unpack it."""
    path = tree_dir(cache)
    if not os.path.isfile(os.path.join(path, 'stackrc')):
        raise TreeMissing(
            f'devstack {COMMIT[:8]} (series {SERIES}) is not in the lab '
            f'cache ({path}): unpack it from a clone of openstack/devstack '
            f'with "python -m tests.devstack.tree unpack '
            f'<clone>/.git" (doc/source/devstack.rst)')
    return path


def unpack(git_dir, cache=None):
    """Unpack the pinned commit of the clone at ``git_dir``; its path."""
    path = tree_dir(cache)
    if os.path.isfile(os.path.join(path, 'stackrc')):
        return path
    found = subprocess.run(
        ['git', '--git-dir', git_dir, 'cat-file', '-e', COMMIT + '^{commit}'],
        capture_output=True)
    if found.returncode:
        raise TreeMissing(f'{git_dir} has no commit {COMMIT}')
    stackrc = subprocess.run(
        ['git', '--git-dir', git_dir, 'show', f'{COMMIT}:stackrc'],
        capture_output=True, text=True, check=True).stdout
    if series(stackrc) != SERIES:
        raise TreeMissing(f'{COMMIT[:8]} names series {series(stackrc)}, '
                          f'not {SERIES}')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = tempfile.mkdtemp(prefix='devstack-', dir=os.path.dirname(path))
    archive = subprocess.Popen(['git', '--git-dir', git_dir, 'archive',
                                COMMIT], stdout=subprocess.PIPE)
    subprocess.run(['tar', '-x', '-C', partial], stdin=archive.stdout,
                   check=True)
    if archive.wait():
        raise TreeMissing(f'git archive of {COMMIT} failed')
    os.rename(partial, path)
    return path


def make_stack_user(path):
    """devstack's own tools/create-stack-user.sh, as root.

    stack.sh refuses to run as root; the user it runs as, with its
    passwordless sudo, is what this script makes.
    """
    subprocess.run(['bash', os.path.join(path, 'tools',
                                         'create-stack-user.sh')],
                   check=True)


USAGE = ('usage: python -m tests.devstack.tree unpack GIT_DIR\n'
         '       python -m tests.devstack.tree stack-user')


def main(argv):
    try:
        if argv[:1] == ['unpack'] and len(argv) == 2:
            print(unpack(argv[1]))
        elif argv == ['stack-user']:
            make_stack_user(require())
        else:
            print(USAGE, file=sys.stderr)
            return 2
    except TreeMissing as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
