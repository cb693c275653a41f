#!/usr/bin/env bash
# Many `oral reproduce` seeds at once, one process per seed, on a machine with more cores (and a
# GPU, where present: every process shares it) than this project's two-core CI machine. Used on
# the lent H100 for the paper-protocol rows of reproduction_paper.md (14 processes at a time).
#
#   bash benchmarks/parallel_seeds.sh JOBS_FILE [PARALLEL] [SECONDS] [-- extra reproduce options]
#
# JOBS_FILE: one job per line, `METHOD DATASET PRIOR SEED PROTOCOL` (PRIOR: prior | noprior,
# PROTOCOL: ours | paper), e.g. `oral amazonphoto prior 3 paper`; blank lines and # comments are
# skipped. Jobs run in file order, PARALLEL at a time (default: the number of cores); none starts
# once fewer than 20 s of SECONDS (default: no limit) are left, and a running one is stopped
# at the limit (its seed writes nothing, so rerunning the file redoes it). Finished seeds are
# skipped by `oral reproduce` itself, so the file can be rerun until every line says done.
# Each job's log goes to $LOGS (default state/parallel_seeds/), one line per job to stdout.
# Afterwards, `oral reproduce` over the same rows (every seed reused) rewrites the tables.
# ORAL=... names the command (default .venv/bin/oral; on a machine without the package,
# ORAL="python3 -m cli.main" from the repository root: only torch, torch-geometric, scipy,
# pyarrow and python-igraph are needed for `reproduce`).
set -uo pipefail
jobs_file=${1:?usage: parallel_seeds.sh JOBS_FILE [PARALLEL] [SECONDS] [-- options]}
shift
par=$(nproc)
limit=0
if [ $# -gt 0 ] && [ "$1" != "--" ]; then par=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then limit=$1; shift; fi
[ "${1:-}" = "--" ] && shift
[ -r "$jobs_file" ] || { echo "error: $jobs_file: cannot read the jobs file" >&2; exit 2; }
bad=$(grep -vE '^\s*(#.*)?$' "$jobs_file" | awk 'NF != 5 || ($3 != "prior" && $3 != "noprior") || $4 !~ /^[0-9]+$/ || ($5 != "ours" && $5 != "paper") {print NR": "$0}' | head -3)
if [ -n "$bad" ]; then
  echo "error: $jobs_file: rule METHOD DATASET prior|noprior SEED ours|paper; bad lines: $(echo "$bad" | tr '\n' ';')" >&2
  exit 2
fi
export ORAL=${ORAL:-.venv/bin/oral} LOGS=${LOGS:-state/parallel_seeds} EXTRA="$*"
export END=$(( limit > 0 ? $(date +%s) + limit : 0 ))
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1
mkdir -p "$LOGS"
one() {
  local method=$1 dataset=$2 prior=$3 seed=$4 protocol=$5 left=0
  if [ "$END" -gt 0 ]; then
    left=$(( END - $(date +%s) ))
    [ $left -gt 20 ] || { echo "$method $dataset $prior $seed $protocol: not started (time limit)"; return; }
  fi
  local log="$LOGS/$method-$dataset-$prior-$protocol-$seed.log" start
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout $left $ORAL reproduce --quiet --seeds 1 --first-seed "$seed" --dataset "$dataset" \
    --method "$method" $([ "$prior" = prior ] && echo --prior) --protocol "$protocol" $EXTRA \
    > "$log" 2>&1
  local rc=$?
  local what="done"
  [ $rc -eq 124 ] && what="stopped at the time limit"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && what="error $rc, see $log"
  echo "$method $dataset $prior $seed $protocol: $what ($(( $(date +%s) - start )) s)"
}
export -f one
grep -vE '^\s*(#.*)?$' "$jobs_file" | xargs -P "$par" -L 1 bash -c 'one "$@"' _
