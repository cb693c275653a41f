#!/usr/bin/env bash
# The ORAL-family rows of benchmarks/run_flip.sh (the known-group checks and the known-absorb
# guard on: known_split_share=0.5, known_absorb_share=0.5, known_absorb_guard=true) on the lent
# GPU, in one call: 16 `oral reproduce` processes share the card (benchmarks/parallel_seeds.sh),
# seeds interleaved across the cells so a run cut short leaves every cell with its first seeds.
# WHAT: strict (ORAL, strict protocol, three graphs without and with the prior; done on an H200
# on 2026-11-27, kept as a GPU record: the flip takes its strict rows from CPUs, where the
# committed OpenNCD rows trained, benchmarks/run_flip.sh), paper (ORAL, paper protocol,
# AmazonPhoto) or ablations (no-POL and no-PAN, paper protocol, AmazonPhoto, both priors): the
# cells whose committed OpenNCD rows trained on a GPU (python -m benchmarks.flip_status).
# H200 throughput: about 150 s a fit with 16 processes, so ~6 fits a minute. Each seed file also records, from the same training
# run, what the unchecked groups and the unguarded check would have reported
# (selection_alternatives: last_unchecked, last_unguarded). BlogCatalog's strict training also
# scores its paper-protocol twin.
# Runs from the repository root on the device with the igraph wheels in .whl and the datasets in
# .gpudata (both carried, both ignored; fill them with
#   pip download igraph==1.0.0 texttable --no-deps --only-binary=:all: -d .whl
#   cp -r ../shared/datasets .gpudata); the seed files come back as $OUT/flip_guard.tgz; unpack it
# under benchmarks/results/ (it holds flip_guard/runs/...).
#   bash benchmarks/gpu_flip.sh SECONDS [FIRST_SEED] [WHAT]
OUT=${OUT:-gpu_out}
LIMIT=${1:?seconds}; FIRST=${2:-0}; WHAT=${3:-strict}
case $WHAT in
  strict) methods="oral"; protocol=ours; graphs="blogcatalog amazonphoto cora" ;;
  paper) methods="oral"; protocol=paper; graphs="amazonphoto" ;;
  ablations) methods="oral_no_pol oral_no_pan"; protocol=paper; graphs="amazonphoto" ;;
  *) echo "error: WHAT must be strict, paper or ablations, got '$WHAT'" >&2; exit 2 ;;
esac
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
source benchmarks/gpu_setup.sh
start=$(date +%s)
CHECKS="--set known_split_share=0.5 --set known_absorb_share=0.5 --set known_absorb_guard=true"
echo "== smoke $(date +%T)"
timeout 120 python3 -m cli.main reproduce --dataset cora --seeds 1 --quiet --epochs 3 $CHECKS \
  --data-dir .gpudata --out /tmp/smoke >/tmp/smoke.log 2>&1 || { tail -20 /tmp/smoke.log; exit 1; }
python3 -c "import glob, json; print('smoke fit ran on', json.load(open(glob.glob('/tmp/smoke/runs/*/*/seed_0.json')[0]))['device'])"
jobs=/tmp/flip_jobs.txt; : >"$jobs"
for s in $(seq "$FIRST" 9); do
  for m in $methods; do
    for ds in $graphs; do
      for prior in prior noprior; do echo "$m $ds $prior $s $protocol" >>"$jobs"; done
    done
  done
done
left=$(( LIMIT - ($(date +%s) - start) ))
echo "== $(wc -l <"$jobs") jobs, ${left} s $(date +%T)"
W=/tmp/res/flip_guard; mkdir -p /tmp/res
# start from the committed rows, so seeds finished elsewhere (Cora's, on CPUs) are reused, not rerun
[ -d benchmarks/results/flip_guard ] && cp -r benchmarks/results/flip_guard /tmp/res/; mkdir -p "$W"
ORAL="python3 -m cli.main" LOGS=/tmp/logs bash benchmarks/parallel_seeds.sh "$jobs" 16 "$left" \
  -- $CHECKS --data-dir .gpudata --out "$W"
echo "== $(date +%T): $(find "$W" -name 'seed_*.json' | wc -l) seed files"
grep -lE "Traceback|rror" /tmp/logs/*.log 2>/dev/null | head -3 | xargs -r tail -5
tar -czf "$OUT/flip_guard.tgz" -C /tmp/res flip_guard
