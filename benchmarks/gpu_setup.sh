# Sourced by the lent-GPU scripts (gpu_flip.sh, gpu_proxy.sh, gpu_night.sh): the output folder,
# unbuffered Python on this checkout, the carried igraph wheels (.whl, which the device machine
# lacks) installed into /tmp/site, and the card's name. The device machine already holds torch,
# torch-geometric, pyarrow, scipy and pandas.
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=.:/tmp/site
fi
nvidia-smi -L
