#!/bin/bash
# Run the Horizon panel's Django tests (views against the in-process REST
# API, and the headless Chromium screenshot test) in their own virtualenv.
#
# Horizon and Django stay out of the project's main environment: Horizon
# pins its own Django and xstatic packages. Usage:
#
#   tests/horizon/run.sh [django test labels...]
#   tests/horizon/run.sh --prepare    (make the virtualenv, run nothing: the
#                                      cloud tier serves Horizon from it)
#
# HORIZON_VENV     virtualenv to create or reuse (default /tmp/hvenv; tox
#                  sets it to its own env dir and installs the deps itself).
# NUMA_POLICY_REQUIRE_BROWSER=1  fail, rather than skip, when Chromium or
#                  chromedriver is missing (CI).
# Screenshots: .artifacts/horizon-numa-panel.png, horizon-numa-host.png.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${HORIZON_VENV:-/tmp/hvenv}
CONSTRAINTS=$ROOT/constraints-horizon.txt

if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
# The cloud tier serves Horizon from the virtualenv under gunicorn.
wanted=(horizon selenium)
if [[ "${1:-}" == --prepare ]]; then
    wanted+=(gunicorn)
fi
# uv (tox-uv's) installs in seconds what pip takes most of a minute for.
if command -v uv >/dev/null; then
    install=(uv pip install -q --python "$VENV/bin/python")
else
    install=("$VENV/bin/pip" install)
fi
if ! "$VENV/bin/python" -c "import $(IFS=,; echo "${wanted[*]}")" 2>/dev/null; then
    "${install[@]}" -c "$CONSTRAINTS" "${wanted[@]}" \
        -r "$ROOT/requirements.txt" oslo.db alembic wsgi-intercept
    "${install[@]}" -c "$CONSTRAINTS" --no-deps -e "$ROOT"
fi
if [[ "${1:-}" == --prepare ]]; then
    exit 0
fi

cd "$ROOT"
mkdir -p .artifacts
labels=("$@")
if [[ ${#labels[@]} -eq 0 ]]; then
    labels=(nova_numa_policy.dashboard.tests)
fi
DJANGO_SETTINGS_MODULE=nova_numa_policy.dashboard.tests.settings \
    exec "$VENV/bin/python" -m django test --noinput "${labels[@]}"
