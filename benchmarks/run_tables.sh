#!/usr/bin/env bash
# The sweeps behind benchmarks/results/reproduction.{csv,md} (Table 2, 3 and 4 for ORAL and its
# ablations). Resumable: finished seeds are reused, so rerun after an interruption.
#   bash benchmarks/run_tables.sh cora            # one dataset, every method, both priors
#   bash benchmarks/run_tables.sh                 # all three datasets
set -euo pipefail
cd "$(dirname "$0")/.."
ORAL=${ORAL:-.venv/bin/oral}
datasets=${*:-cora amazonphoto blogcatalog}
for method in oral opennc oral_no_pol oral_no_pan; do
  for ds in $datasets; do
    $ORAL reproduce --dataset "$ds" --method "$method" --seeds 10 --both-priors --quiet
  done
done
