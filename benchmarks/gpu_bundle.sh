#!/usr/bin/env bash
# The pipeline's stack for the lent GPU machine, as one carried file: the device image holds
# torch, torch-geometric, pyarrow, scipy and pandas (Python 3.12) but not Prefect, MLflow, DuckDB,
# Great Expectations or igraph. This installs the packages of requirements.lock that the image
# lacks (KINDS.md's list, in DEVICE_HAS below) for CPython 3.12 / manylinux into a folder, drops
# what a night never reads (bytecode, test folders, MLflow's web UI) and packs it in two parts
# (.gpusite/gpusite-1.tar.xz: DuckDB, igraph, cryptography, 23 MB; gpusite-2.tar.xz: the rest,
# 30 MB): the device tool carries at most 64 MiB with the tree (23 MB), so a first call carries
# and unpacks part 1 and the next, on the still-warm machine, carries part 2 and runs the night:
#   bash benchmarks/gpu_bundle.sh
#   device run, carry .gpusite/gpusite-1.tar.xz: tar -xJf .gpusite/gpusite-1.tar.xz -C /tmp
#   device run, carry .gpusite/gpusite-2.tar.xz: bash benchmarks/gpu_full_night.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
DEVICE_HAS="absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs
certifi charset-normalizer click cloudpickle colorama contourpy cycler execnet filelock fonttools
frozenlist fsspec h11 httpcore httpx humanize idna iniconfig jinja2 joblib kiwisolver markdown
markdown-it-py markupsafe matplotlib mdurl mpmath msgpack multidict narwhals networkx numpy packaging
pandas pathspec pillow pip pluggy prometheus-client propcache protobuf psutil pyarrow pygments
pyparsing pytest pytest-xdist python-dateutil pyyaml regex requests rich scikit-learn scipy
shellingham six sortedcontainers sympy threadpoolctl toolz torch torch-geometric tqdm typer
typing-extensions urllib3 werkzeug xxhash yarl zipp"
# the Dask fan-out is not part of a night
NOT_NEEDED="dask distributed prefect-dask zict partd locket tblib tornado"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
norm() { tr 'A-Z_.' 'a-z--'; }
skip=$(echo $DEVICE_HAS $NOT_NEEDED | tr ' ' '\n' | norm)
grep -E '^[A-Za-z0-9]' requirements.lock | sed 's/ .*//; s/\\$//' | while read -r spec; do
  name=$(echo "${spec%%==*}" | norm)
  echo "$skip" | grep -qx "$name" || echo "$spec"
done > "$work/reqs.txt"
echo "$(wc -l <"$work/reqs.txt") packages for the device"
plat=""
for p in manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1; do
  plat="$plat --platform ${p}_x86_64"
done
"$PY" -m pip install -q --no-deps --no-compile --only-binary=:all: --python-version 3.12 \
  --implementation cp --abi cp312 $plat --target "$work/gpusite" -r "$work/reqs.txt"
rm -rf "$work/gpusite/mlflow/server/js"
find "$work/gpusite" -name __pycache__ -type d -prune -exec rm -rf {} +
find "$work/gpusite" -type d \( -name tests -o -name test \) -prune -exec rm -rf {} +
rm -rf .gpusite && mkdir -p .gpusite
cd "$work"
part1=$(ls -d gpusite/_duckdb* gpusite/duckdb* gpusite/adbc_driver_duckdb gpusite/igraph* \
        gpusite/cryptography*)
tar -cf - $part1 | xz -T2 -6 > "$OLDPWD/.gpusite/gpusite-1.tar.xz"
tar -cf - $(printf -- "--exclude=%s " $part1) gpusite | xz -T2 -6 > "$OLDPWD/.gpusite/gpusite-2.tar.xz"
cd "$OLDPWD"
ls -la .gpusite
