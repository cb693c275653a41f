#!/usr/bin/env bash
# The sweeps behind benchmarks/results/reproduction.{csv,md} (Tables 2, 3 and 4: ORAL, its
# ablations and the baselines). Resumable: finished seeds are reused, so rerun after an
# interruption; a cell never run shows as "not run" in reproduction.md.
#   bash benchmarks/run_tables.sh cora            # one dataset, every method, both priors
#   bash benchmarks/run_tables.sh                 # all three datasets
set -euo pipefail
cd "$(dirname "$0")/.."
ORAL=${ORAL:-.venv/bin/oral}
datasets=${*:-cora amazonphoto blogcatalog}
run() { $ORAL reproduce --seeds 10 --quiet "$@"; }
for ds in $datasets; do
  for method in oral opennc oral_no_pol oral_no_pan gcd; do
    run --dataset "$ds" --method "$method" --both-priors
  done
  run --dataset "$ds" --method gcn                  # never uses the class number
  run --dataset "$ds" --method vgae_kmeans --prior  # k-means needs it
done
