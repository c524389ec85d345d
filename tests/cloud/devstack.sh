# shellcheck shell=bash
# devstack's helpers as this cloud answers them, sourced over the stubs
# by tests/devstack/run_plugin.sh (NUMA_POLICY_TEST_HELPERS): the stubs'
# ini helpers write real files, and what would start or register
# something is recorded in $NUMA_POLICY_TEST_CALL_LOG for
# tests/cloud/plugin.py to carry out.
#
# The stubs answer the helpers that name the broker, a database and
# keystone with a documentation address and made-up passwords; here they
# answer with this cloud's, from the environment plugin.py sets (devstack's
# own variable names where devstack has one), so the files work as written.

# The plugin runs numa-policy-db-sync from here: the real one.
function get_python_exec_prefix { echo "$NUMA_CLOUD_BIN_DIR"; }
function get_transport_url { echo "$NUMA_CLOUD_TRANSPORT_URL"; }
function database_connection_url {
    echo "$NUMA_CLOUD_DATABASE_URL_PREFIX$1?charset=utf8"
}

# devstack's configure_keystone_authtoken_middleware: what it writes, with
# no CA file and no memcached (this cloud has neither).
function configure_keystone_authtoken_middleware {
    local conf=$1 user=$2 section=${3:-keystone_authtoken}
    iniset "$conf" "$section" auth_type password
    iniset "$conf" "$section" interface public
    iniset "$conf" "$section" auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$conf" "$section" username "$user"
    iniset "$conf" "$section" password "$SERVICE_PASSWORD"
    iniset "$conf" "$section" user_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$conf" "$section" project_name "$SERVICE_PROJECT_NAME"
    iniset "$conf" "$section" project_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$conf" "$section" www_authenticate_uri "$KEYSTONE_SERVICE_URI"
    _record configure_keystone_authtoken_middleware "$@"
}
