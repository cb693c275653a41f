#!/usr/bin/env bash
# Seed stability of the Table-2 cells on the lent GPU (issue 47, item 2): ORAL at today's
# defaults, three graphs, without and with the prior, both protocols, in one call. 16
# `oral reproduce` processes share the card (benchmarks/parallel_seeds.sh), seeds interleaved
# across the twelve cells so a run cut short leaves every cell with its first seeds. Every seed
# file records its partition of the scored nodes, which `python -m benchmarks.stability` reads
# for the adjusted Rand index between seeds. GPU seeds are never mixed with CPU seeds: the device
# alone moves which basin a seed lands in, so these are a GPU record of their own.
# Runs from the repository root on the device with the igraph wheels in .whl and the datasets in
# .gpudata (both carried, both ignored; fill them with
#   pip download igraph==1.0.0 texttable==1.7.2 --no-deps --only-binary=:all: --python-version 3.12 -d .whl
#   cp -r ../shared/datasets .gpudata); the seed files come back as $OUT/stability_gpu.tgz; unpack
# it under benchmarks/results/stability/ (it holds runs_gpu/...).
#   bash benchmarks/gpu_stability.sh SECONDS [FIRST_SEED]
OUT=${OUT:-gpu_out}
LIMIT=${1:?seconds}; FIRST=${2:-0}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
source benchmarks/gpu_setup.sh
start=$(date +%s)
echo "== smoke $(date +%T)"
timeout 120 python3 -m cli.main reproduce --dataset cora --seeds 1 --quiet --epochs 3 \
  --data-dir .gpudata --out /tmp/smoke >/tmp/smoke.log 2>&1 || { tail -20 /tmp/smoke.log; exit 1; }
python3 -c "import glob, json; r = json.load(open(glob.glob('/tmp/smoke/runs/*/*/seed_0.json')[0])); print('smoke fit ran on', r['device'], 'partition recorded:', bool(r.get('partition')))"
jobs=/tmp/stability_jobs.txt; : >"$jobs"
for s in $(seq "$FIRST" 9); do
  for protocol in ours paper; do
    for ds in blogcatalog amazonphoto cora; do
      for prior in noprior prior; do echo "oral $ds $prior $s $protocol" >>"$jobs"; done
    done
  done
done
left=$(( LIMIT - ($(date +%s) - start) ))
echo "== $(wc -l <"$jobs") jobs, ${left} s $(date +%T)"
W=/tmp/res/runs_gpu; mkdir -p "$W"
ORAL="python3 -m cli.main" LOGS=/tmp/logs bash benchmarks/parallel_seeds.sh "$jobs" 16 "$left" \
  -- --data-dir .gpudata --out "$W"
echo "== $(date +%T): $(find "$W" -name 'seed_*.json' | wc -l) seed files"
grep -lE "Traceback|rror" /tmp/logs/*.log 2>/dev/null | head -3 | xargs -r tail -5
tar -czf "$OUT/stability_gpu.tgz" -C /tmp/res runs_gpu
