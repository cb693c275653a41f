#!/usr/bin/env bash
# The sweeps behind benchmarks/results/reproduction*.{csv,md} (Tables 2, 3 and 4: ORAL, its
# ablations and the baselines) under both evaluation protocols. Resumable: finished seeds are
# reused, so rerun after an interruption; a cell never run shows as "not run".
#   bash benchmarks/run_tables.sh cora            # one dataset, every method, both priors
#   bash benchmarks/run_tables.sh                 # all three datasets (cheapest first)
#   PROTOCOLS=paper bash benchmarks/run_tables.sh cora
# Table 2 and the class number run under both protocols; the ablations of Table 4 under the
# paper's protocol only (where the paper's numbers live). Afterwards
#   python -m benchmarks.goal --out benchmarks/results/goal.md
# rewrites issue 17's scoreboard from the same seed files.
set -euo pipefail
cd "$(dirname "$0")/.."
ORAL=${ORAL:-.venv/bin/oral}
datasets=${*:-cora amazonphoto blogcatalog}
protocols=${PROTOCOLS:-ours paper}
run() { $ORAL reproduce --seeds 10 --quiet "$@"; }
for ds in $datasets; do
  for protocol in $protocols; do
    methods="oral opennc gcd"
    [ "$protocol" = paper ] && methods="oral opennc oral_no_pol oral_no_pan gcd"
    for method in $methods; do
      run --dataset "$ds" --method "$method" --both-priors --protocol "$protocol"
    done
    run --dataset "$ds" --method gcn --protocol "$protocol"                  # never uses the class number
    run --dataset "$ds" --method vgae_kmeans --prior --protocol "$protocol"  # k-means needs it
  done
done
