#!/bin/bash
# Run the plugin's phases the way stack.sh, unstack.sh and clean.sh do,
# with devstack's own function library: devstack's tree (pinned, from the
# lab's cache; tests/devstack/tree.py) with its local.conf, which enables
# the plugin by "enable_plugin nova-numa-policy file://...".
#
#   with_devstack.sh DEVSTACK_DIR STEP...      STEP: stack:install, unstack, ...
#
# What runs is devstack's: functions, functions-common, inc/*, stackrc,
# lib/* sourced in stack.sh's order, local.conf read by devstack's own
# extract_localrc_section, the plugin fetched (offline: already in $DEST),
# its settings loaded and each phase run by devstack's run_phase. What is
# not devstack's is what stack.sh does between phases (install and start
# OpenStack), and where devstack would write outside this test's tree:
#
#   NUMA_DEVSTACK_ETC       nova's, tempest's and the client's files
#                           (/etc/nova, /etc/openstack, ...) under here;
#   NUMA_DEVSTACK_SYSTEMCTL the service manager in place of "sudo systemctl"
#                           (tests/devstack/unitctl.py: no systemd runs as
#                           init here), unit files under
#                           $NUMA_DEVSTACK_ETC/systemd/system;
#   NUMA_DEVSTACK_KEYSTONE_URI  the identity service, where it runs here
#                           (devstack puts it behind Apache at /identity).
#
# Runs as the stack user, as stack.sh must.
#
# The variables this script sets are read by devstack's functions:
# shellcheck disable=SC2034
set -o errexit

TOP_DIR=$(cd "$1" && pwd)
shift

# stack.sh's, not the library's: devstack's summary lines.
function echo_summary {
    echo -e "$@"
}


# shellcheck source=/dev/null
source "$TOP_DIR/functions"
# shellcheck source=/dev/null
source "$TOP_DIR/lib/stack"
GetDistro
rm -f "$TOP_DIR/.localrc.auto"
extract_localrc_section "$TOP_DIR/local.conf" "$TOP_DIR/localrc" \
    "$TOP_DIR/.localrc.auto"
# shellcheck source=/dev/null
source "$TOP_DIR/stackrc"
for library in database rpc_backend; do
    # shellcheck source=/dev/null
    source "$TOP_DIR/lib/$library"
done
fetch_plugins
run_phase override_defaults
for library in apache tls infra libraries horizon keystone glance nova \
        placement neutron tempest; do
    # shellcheck source=/dev/null
    source "$TOP_DIR/lib/$library"
done

# This machine's paths in place of /etc (set by the libraries above
# without a way to override them from local.conf); read by devstack's
# functions, which shellcheck does not follow (SC2034, disabled above).
NOVA_CONF_DIR=$NUMA_DEVSTACK_ETC/nova
NOVA_CONF=$NOVA_CONF_DIR/nova.conf
NOVA_CPU_CONF=$NOVA_CONF_DIR/nova-cpu.conf
TEMPEST_CONFIG_DIR=$NUMA_DEVSTACK_ETC/tempest
TEMPEST_CONFIG=$TEMPEST_CONFIG_DIR/tempest.conf
OPENSTACKCLIENT_CONF_DIR=$NUMA_DEVSTACK_ETC/openstack
SYSTEMD_DIR=$NUMA_DEVSTACK_ETC/systemd/system
SYSTEMCTL=$NUMA_DEVSTACK_SYSTEMCTL
KEYSTONE_SERVICE_URI=${NUMA_DEVSTACK_KEYSTONE_URI:-$KEYSTONE_SERVICE_URI}

run_phase source
if initialize_database_backends; then
    define_database_baseurl
fi
if is_service_enabled keystone; then
    write_clouds_yaml
    export OS_CLIENT_CONFIG_FILE=$OPENSTACKCLIENT_CONF_DIR/clouds.yaml
fi

for step in "$@"; do
    mode=${step%%:*}
    phase=${step#*:}
    [[ "$phase" == "$step" ]] && phase=""
    echo "== run_phase $mode $phase"
    run_phase "$mode" "$phase"
done
