#!/bin/bash
# shellcheck source-path=SCRIPTDIR
#
# devstack plugin of nova-numa-policy: a dispatcher only. devstack sources
# this file as "plugin.sh <mode> [<phase>]"; each (mode, phase) pair calls
# exactly one phase function of lib/phases, which lists its steps.

_XTRACE_NUMA_POLICY=$(set +o | grep xtrace)
set -o xtrace

NUMA_POLICY_PLUGIN_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

source "$NUMA_POLICY_PLUGIN_DIR/lib/common"
source "$NUMA_POLICY_PLUGIN_DIR/lib/install"
source "$NUMA_POLICY_PLUGIN_DIR/lib/nova"
source "$NUMA_POLICY_PLUGIN_DIR/lib/config"
source "$NUMA_POLICY_PLUGIN_DIR/lib/keystone"
source "$NUMA_POLICY_PLUGIN_DIR/lib/services"
source "$NUMA_POLICY_PLUGIN_DIR/lib/horizon"
source "$NUMA_POLICY_PLUGIN_DIR/lib/tempest"
source "$NUMA_POLICY_PLUGIN_DIR/lib/phases"

case "${1:-}:${2:-}" in
    stack:install) numa_policy_phase_install ;;
    stack:post-config) numa_policy_phase_post_config ;;
    stack:extra) numa_policy_phase_extra ;;
    stack:test-config) numa_policy_phase_test_config ;;
    unstack:*) numa_policy_phase_unstack ;;
    clean:*) numa_policy_phase_clean ;;
    # Other phases (pre-install, ...) have nothing to do for this plugin.
esac

$_XTRACE_NUMA_POLICY
