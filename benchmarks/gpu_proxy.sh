#!/usr/bin/env bash
# Proxy fits for `oral choose` on the lent GPU machine, one process per (graph cell, seed), 16 at
# a time sharing the card (the machine has 16 cores; each process runs one thread). Every fit of
# one comparison runs on the GPU, the defaults included: the device alone moves which basin a
# seed lands in (README, BlogCatalog), so GPU fits are never paired with CPU ones.
#   bash benchmarks/gpu_proxy.sh SECONDS NAME CANDIDATE [CANDIDATE2]
# Phase 1 fits the defaults and CANDIDATE for every cell and seed (seeds interleaved across the
# cells, so a run cut short still leaves every cell with its first seeds); phase 2 fits CANDIDATE2
# (each job waits for its seed's defaults file, then reuses it). The strict cells and their seed
# counts are those of benchmarks/results/choose. Runs from the repository root on the device with
# the igraph wheels in .whl and the datasets in .gpudata (both carried, both ignored); the seed
# files come back as $OUT/NAME.tgz (unpack under benchmarks/results/), then, here,
#   oral choose --dataset D [--prior] --seeds N --candidate ... --out benchmarks/results/NAME
# reads them (pass no --cache of CPU folders). FIRST_SEED=S starts the jobs at seed S (a second
# call that finishes a cut-short run; the fits of a fresh machine start from nothing either way).
# 2026-11-26, H100 (benchmarks/results/choose_lr_gpu): the card is the bottleneck, about 120 s a
# fit with 16 processes on any of the three graphs (~8 fits a minute): 480 s gave seeds 0-2 of
# both settings in every cell, and `FIRST_SEED=3 ... 225 proxy_lr_gpu lr=0.01` seeds 3-5.
OUT=${OUT:-gpu_out}
P=${P:-16}; EXTRA=${EXTRA:-}  # EXTRA: e.g. "--set epochs=2 --window 2" to try the script on a CPU
LIMIT=${1:?seconds}; NAME=${2:?name}; C1=${3:?candidate}; C2=${4:-}
CELLS=("cora noprior 10" "cora prior 10" "amazonphoto noprior 8" "amazonphoto prior 8"
       "blogcatalog noprior 10" "blogcatalog prior 3")
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
source benchmarks/gpu_setup.sh
W=/tmp/$NAME; rm -f /tmp/log_*.txt; FIRST_SEED=${FIRST_SEED:-0}
echo "== smoke $(date +%T)"
timeout 120 python3 -m cli.main choose --dataset cora --seeds 2 --fit-seed 0 --set epochs=3 --window 2 \
  --candidate "$C1" --out /tmp/smoke --data-dir .gpudata || { echo "smoke failed"; exit 1; }
python3 -c "import glob, json; print('smoke fit ran on', json.load(open(glob.glob('/tmp/smoke/*/*/seed_0.json')[0]))['device'])"
jobs=/tmp/jobs.txt; : >"$jobs"
for phase in 1 2; do
  cand=$([ $phase = 1 ] && echo "$C1" || echo "$C2"); [ -z "$cand" ] && continue
  for s in $(seq "$FIRST_SEED" 9); do
    for cell in "${CELLS[@]}"; do
      set -- $cell
      [ "$s" -lt "$3" ] && echo "$phase $1 $2 $3 $s $cand" >>"$jobs"
    done
  done
done
echo "== $(wc -l <"$jobs") jobs $(date +%T)"
one() {  # phase dataset prior seeds seed candidate
  local prior=""; [ "$3" = prior ] && prior=--prior
  if [ "$1" = 2 ]; then  # the defaults of this seed come from phase 1
    until [ -f "$W/$2-$3/defaults/seed_$5.json" ]; do sleep 5; done
  fi
  python3 -m cli.main choose --dataset "$2" $prior --seeds "$4" --fit-seed "$5" --candidate "$6" \
    $EXTRA --out "$W" --data-dir .gpudata >>"/tmp/log_$2_$3_$5.txt" 2>&1
  echo "$(date +%T) done $*: $(grep -c 'proxy All' /tmp/log_$2_$3_$5.txt) fits"
}
export -f one; export W EXTRA
timeout -s INT "$LIMIT" xargs -P "$P" -L 1 bash -c 'one "$@"' _ <"$jobs"
echo "rc=$? $(date +%T)"
cat /tmp/log_*.txt | grep -E "rror|Traceback" | head -5
find "$W" -name "seed_*.json" | wc -l
tar -czf "$OUT/$NAME.tgz" -C /tmp "$NAME"
cat /tmp/log_*.txt >"$OUT/$NAME.log"
