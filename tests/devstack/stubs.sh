# shellcheck shell=bash
# Stand-ins for the devstack functions the plugin calls. The ini helpers
# edit real files (read back by the tests with oslo.config's parser); everything that would touch the system or an OpenStack
# service only appends a line to $NUMA_POLICY_TEST_CALL_LOG:
# the function name and its arguments, separated by tabs.

STUBS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

function _record {
    local IFS=$'\t'
    echo "$*" >> "$NUMA_POLICY_TEST_CALL_LOG"
}

# A tiny INI editor with the semantics of devstack's helpers, in bash so
# that a phase costs no extra processes. iniset replaces every line of the
# option (where its first line was, else at the end of the section);
# iniset_multiline writes one line per value, as a MultiStrOpt needs.
function _ini_write {
    local file=$1 section=$2 option=$3
    shift 3
    local -a lines=() out=() new=()
    local line value in_section=0 seen_section=0 placed=0
    for value in "$@"; do
        new+=("$option = $value")
    done
    [[ -f "$file" ]] && mapfile -t lines < "$file"
    for line in "${lines[@]}"; do
        if [[ "$line" =~ ^\[(.+)\]$ ]]; then
            if ((in_section && !placed)); then
                out+=("${new[@]}")
                placed=1
            fi
            in_section=0
            if [[ "${BASH_REMATCH[1]}" == "$section" ]]; then
                in_section=1
                seen_section=1
            fi
        elif ((in_section)) && _ini_is_option "$line" "$option"; then
            if ((!placed)); then
                out+=("${new[@]}")
                placed=1
            fi
            continue
        fi
        out+=("$line")
    done
    if ((!placed)); then
        ((seen_section)) || out+=("[$section]")
        out+=("${new[@]}")
    fi
    printf '%s\n' "${out[@]}" > "$file"
}

# Whether line $1 sets option $2.
function _ini_is_option {
    [[ "$1" =~ ^([A-Za-z0-9_.-]+)[[:space:]]*= ]] &&
        [[ "${BASH_REMATCH[1]}" == "$2" ]]
}

function iniset { _ini_write "$1" "$2" "$3" "$4"; }

function iniset_multiline { _ini_write "$@"; }

# The first value of the option, or nothing, like devstack's iniget.
function iniget {
    local file=$1 section=$2 option=$3 line value in_section=0
    [[ -f "$file" ]] || return 0
    while IFS= read -r line; do
        if [[ "$line" =~ ^\[(.+)\]$ ]]; then
            in_section=0
            [[ "${BASH_REMATCH[1]}" == "$section" ]] && in_section=1
        elif ((in_section)) && _ini_is_option "$line" "$option"; then
            value=${line#*=}
            echo "${value#"${value%%[![:space:]]*}"}"
            return 0
        fi
    done < "$file"
}

# devstack's service list semantics: comma-separated, any of the arguments
# enabled counts, and disable_service wins over a later enable_service.
function is_service_enabled {
    local service
    for service in "$@"; do
        [[ ",$ENABLED_SERVICES," == *",$service,"* ]] && return 0
    done
    return 1
}

function enable_service {
    local service
    for service in "$@"; do
        [[ ",${DISABLED_SERVICES:-}," == *",$service,"* ]] && continue
        is_service_enabled "$service" || ENABLED_SERVICES+=",$service"
    done
}

function trueorfalse {
    local default=$1 value=${!2:-}
    case "${value:-$default}" in
        1|[yY]es|YES|[tT]rue|TRUE|[oO]n|ON) echo True ;;
        *) echo False ;;
    esac
}

function get_python_exec_prefix { echo "$NUMA_POLICY_TEST_BIN_DIR"; }
function get_transport_url { echo "rabbit://stackrabbit:secret@192.0.2.10:5672/"; }
function database_connection_url {
    echo "mysql+pymysql://root:secret@127.0.0.1/$1?charset=utf8"
}

# The installer helpers: recorded, never run.
function setup_develop { _record setup_develop "$@"; }
function recreate_database { _record recreate_database "$@"; }
function run_process { _record run_process "$@"; }
function stop_process { _record stop_process "$@"; }
function wait_for_service { _record wait_for_service "$@"; }
function create_service_user { _record create_service_user "$@"; }
function get_or_create_service { _record get_or_create_service "$@"; echo svc-id; }
function get_or_create_endpoint { _record get_or_create_endpoint "$@"; echo ep-id; }
function configure_keystone_authtoken_middleware {
    _record configure_keystone_authtoken_middleware "$@"
}
function echo_summary { _record echo_summary "$*"; }
function warn { _record warn "${*:2}"; }
function die { echo "die: ${*:2}" >&2; exit 1; }

# The stack user does not exist here: its group is named after it.
function id {
    if [[ "$1" == -gn ]]; then
        echo "$2"
    else
        command id "$@"
    fi
}

# Directories are created for real under the test's temporary tree; the
# harness runs unprivileged, so sudo just runs the command, and the owner
# asked for is dropped.
function sudo {
    if [[ "$1" == chown || "$1" == chmod ]]; then
        _record "sudo_$1" "${@:2}"
    elif [[ "$1" == install ]]; then
        local -a args=()
        shift
        while [[ $# -gt 0 ]]; do
            case "$1" in
                -o|-g) shift 2 ;;
                *) args+=("$1"); shift ;;
            esac
        done
        install "${args[@]}"
    else
        "$@"
    fi
}

# Console scripts of the package: the plugin runs numa-policy-db-sync
# directly, so $NUMA_POLICY_TEST_BIN_DIR holds a recording fake under that
# name (the log's path comes from the exported environment).
function make_fake_console_scripts {
    mkdir -p "$NUMA_POLICY_TEST_BIN_DIR"
    ln -sf "$STUBS_DIR/fake_console_script" \
        "$NUMA_POLICY_TEST_BIN_DIR/numa-policy-db-sync"
    ln -sf "$STUBS_DIR/fake_console_script" \
        "$NUMA_POLICY_TEST_BIN_DIR/numa-policy-nova-driver-shim"
}
