#!/usr/bin/env bash
# Create or update the ORAL deployments of deployments/prefect.yaml on the Prefect server of
# PREFECT_API_URL. Idempotent: run it again after changing the schedule or a parameter.
#
#   ORAL_GRAPH=papers ORAL_SNAPSHOT_ROOT=/data/snapshots deployments/deploy.sh
#   ORAL_TIMEZONE=America/New_York ORAL_CRON='30 1 * * *' ... deployments/deploy.sh
#   deployments/deploy.sh --name nightly          # one deployment (default: --all)
#
# The work pools must exist first: prefect work-pool create cpu --type process (same for gpu).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export ORAL_REPO="${ORAL_REPO:-$(dirname "$here")}"
export ORAL_CRON="${ORAL_CRON:-0 2 * * *}"
export ORAL_TIMEZONE="${ORAL_TIMEZONE:-Europe/Paris}"
export ORAL_SCHEDULE_ACTIVE="${ORAL_SCHEDULE_ACTIVE:-true}"
export DO_NOT_TRACK="${DO_NOT_TRACK:-true}"
export PREFECT_SERVER_ANALYTICS_ENABLED="${PREFECT_SERVER_ANALYTICS_ENABLED:-false}"

missing=()
for var in ORAL_GRAPH ORAL_SNAPSHOT_ROOT PREFECT_API_URL; do
  [[ -n "${!var:-}" ]] || missing+=("$var")
done
if (( ${#missing[@]} )); then
  echo "deploy.sh: set ${missing[*]} (see deployments/prefect.yaml and the README, 'For operators')" >&2
  exit 2
fi
[[ -d "$ORAL_REPO/flows" ]] || { echo "deploy.sh: ORAL_REPO=$ORAL_REPO is not the checkout" >&2; exit 2; }

prefect="${PREFECT:-$ORAL_REPO/.venv/bin/prefect}"
[[ -x "$prefect" ]] || prefect="prefect"

cd "$ORAL_REPO"   # entrypoints are relative to the checkout
if (( $# == 0 )); then
  set -- --all
fi
exec "$prefect" --no-prompt deploy --prefect-file deployments/prefect.yaml "$@"
