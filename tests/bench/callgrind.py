"""Instruction counts of code sections, under valgrind's callgrind.

On a shared machine CPU time moves by a few per cent from run to run with
what the neighbours do; the number of instructions a pass executes does
not. A benchmark re-runs itself under callgrind with instrumentation off
(imports and set-up run at near native speed), and brackets each section
with two calls into a tiny C library built here: the first turns
instrumentation and collection on, the second dumps the counts under the
section's name and turns them off. The parent reads one dump per section.

Instructions are not time (cache misses and branch mispredictions are not
counted), so the timed runs stay the reference; the counts say, without
noise, how much more work a configuration does than another.

Needs valgrind, its callgrind.h and gcc (all from Debian's valgrind and
gcc packages).
"""

import ctypes
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HEADER = '/usr/include/valgrind/callgrind.h'
ENV_LIBRARY = 'NUMA_POLICY_CALLGRIND_LIB'
_TRIGGER = 'desc: Trigger: Client Request: '

_C_SOURCE = r'''
#include <valgrind/callgrind.h>

void section_start(void) {
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
}

void section_stop(const char *name) {
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(name);
    CALLGRIND_STOP_INSTRUMENTATION;
}
'''


def missing():
    """What this machine lacks to count instructions, or None."""
    for tool in ('valgrind', 'gcc'):
        if shutil.which(tool) is None:
            return f'{tool} is not installed'
    if not os.path.exists(HEADER):
        return f'{HEADER} is missing (Debian package valgrind)'
    return None


def _build(directory):
    source = os.path.join(directory, 'sections.c')
    library = os.path.join(directory, 'libsections.so')
    with open(source, 'w') as f:
        f.write(_C_SOURCE)
    subprocess.run(['gcc', '-O2', '-shared', '-fPIC', '-o', library, source],
                   check=True)
    return library


def _dumps(directory):
    """{section name: instructions} from the dump files of one run."""
    counts = {}
    for path in glob.glob(os.path.join(directory, 'cg.out.*')):
        name = total = None
        with open(path) as f:
            for line in f:
                if line.startswith(_TRIGGER):
                    name = line[len(_TRIGGER):].strip()
                elif line.startswith('summary: '):
                    total = int(line.split()[1])
        if name is not None and total is not None:
            counts[name] = total
    return counts


def run(module, argv):
    """Run ``python -m module argv`` under callgrind; its sections' counts.

    The child finds the sections library through the environment and
    calls :func:`section` around what it measures. Hash randomisation is
    off so that two runs execute the same instructions.
    """
    directory = tempfile.mkdtemp(prefix='numa-policy-callgrind-')
    try:
        env = dict(os.environ, PYTHONHASHSEED='0')
        env[ENV_LIBRARY] = _build(directory)
        subprocess.run(
            ['valgrind', '--tool=callgrind', '--instr-atstart=no',
             '--collect-atstart=no', '--quiet',
             f'--callgrind-out-file={directory}/cg.out',
             sys.executable, '-m', module] + list(argv),
            check=True, env=env)
        return _dumps(directory)
    finally:
        shutil.rmtree(directory)


class Sections:
    """The child's side: brackets sections with the library's calls."""

    def __init__(self):
        self._lib = ctypes.CDLL(os.environ[ENV_LIBRARY])
        self._lib.section_stop.argtypes = [ctypes.c_char_p]

    def measure(self, name, func):
        self._lib.section_start()
        try:
            func()
        finally:
            self._lib.section_stop(name.encode())
