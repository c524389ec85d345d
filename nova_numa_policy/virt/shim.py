"""Make the driver extension loadable by nova-compute.

nova (checked on 34) loads ``[DEFAULT] compute_driver`` as
``nova.virt.<compute_driver>``, so only classes reachable under the
``nova.virt`` package can be drivers. This writes a one-line module,
``nova/virt/numa_policy.py``, that re-exports our class; then

    [DEFAULT]
    compute_driver = numa_policy.NumaPolicyLibvirtDriver

Run ``python -m nova_numa_policy.virt.shim`` after installing or upgrading
nova (a nova package upgrade may remove the file). Idempotent.
"""

import os
import sys

MODULE = 'numa_policy'
COMPUTE_DRIVER = f'{MODULE}.NumaPolicyLibvirtDriver'
CONTENT = (
    '"""Installed by nova-numa-policy: see nova_numa_policy.virt.shim."""\n'
    'from nova_numa_policy.virt.driver import NumaPolicyLibvirtDriver\n'
    '\n'
    "__all__ = ['NumaPolicyLibvirtDriver']\n")


def shim_path(virt_dir=None):
    if virt_dir is None:
        import nova.virt
        virt_dir = os.path.dirname(nova.virt.__file__)
    return os.path.join(virt_dir, f'{MODULE}.py')


def install(virt_dir=None):
    """Write the shim if it is missing or different; return its path."""
    path = shim_path(virt_dir)
    try:
        with open(path) as f:
            if f.read() == CONTENT:
                return path
    except FileNotFoundError:
        pass
    with open(path, 'w') as f:
        f.write(CONTENT)
    return path


def main():
    path = install(sys.argv[1] if len(sys.argv) > 1 else None)
    print(f'{path}\nSet [DEFAULT] compute_driver = {COMPUTE_DRIVER}')


if __name__ == '__main__':
    main()
