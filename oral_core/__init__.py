"""ORAL: Open-world gRAph neuraL network (Jin et al.), the method core.

Built on torch, torch_geometric, numpy, scipy and python-igraph (Leiden clustering, Eq. 4), with
pyarrow for node columns (``columns.py``) and tqdm for the optional progress bar: no
orchestration imports (no prefect, mlflow, duckdb or great_expectations).
"""
__version__ = "0.1.0"

# Bumped whenever a change to the method can change a result: part of every run's configuration
# hash, so a resumed sweep recomputes seeds that an older revision produced.
#   1: first reproduction (session 1)
#   2: validation nodes are never pseudo-label candidates
#   3: collapsed layers fall back to singleton prototype groups (tried, reverted: no gain on the
#      Cora held-out-class proxy)
#   4: revision 3 reinstated: on AmazonPhoto full ORAL never left the collapsed state without it
#      (validation accuracy 0.31 for 100 epochs, one predicted class; with it 0.96)
ALGORITHM_REVISION = 4
