#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Run devstack phases of the plugin against the stubs, the way stack.sh,
# unstack.sh and clean.sh do: the plugin's settings once, then plugin.sh
# sourced in the same shell for each "mode[:phase]" argument.
#
# The caller provides the environment devstack would (DEST, NOVA_CONF,
# ENABLED_SERVICES, ...) and NUMA_POLICY_TEST_CALL_LOG.
set -o errexit -o nounset -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PLUGIN_DIR=$HERE/../../devstack

source "$HERE/stubs.sh"
make_fake_console_scripts
# A caller whose helpers must answer for a real cloud (tests/cloud) names
# a file of its own definitions, sourced over the stubs.
if [[ -n "${NUMA_POLICY_TEST_HELPERS:-}" ]]; then
    # shellcheck source=/dev/null
    source "$NUMA_POLICY_TEST_HELPERS"
fi
# shellcheck source=../../devstack/settings
source "$PLUGIN_DIR/settings"

for step in "$@"; do
    mode=${step%%:*}
    phase=${step#*:}
    [[ "$phase" == "$step" ]] && phase=""
    # shellcheck source=../../devstack/plugin.sh
    source "$PLUGIN_DIR/plugin.sh" "$mode" "$phase"
done
