"""The reproduction harness behind ``oral reproduce`` and ``oral choose``, apart from the method.

* :mod:`harness.experiment`: one dataset, one seed, one method (ORAL, its ablations, OpenNCD or
  a baseline) scored as in the paper (the protocols, the paper's known classes and numbers);
* :mod:`harness.reproduction`: the resumable ten-seed sweeps and the tables they feed
  (``reproduction.csv`` / ``reproduction_<protocol>.md``);
* :mod:`harness.proxy`: the held-out-known-class proxy, the no-novel proxy, and the per-graph
  choice of settings made with them (``oral choose``) with its known-class guard;
* :mod:`harness.baselines`: the baselines of the paper's Table 2 (GCN, VGAE + k-means, GCD).

It imports the method (:mod:`oral_core`: ORAL, its inference, the datasets and metrics) and never
orchestration (Prefect, MLflow, DuckDB, Dask), never ``flows``, ``tasks`` or ``cli``. The method
and the nightly pipeline never import it (``tests/core/test_layering.py``); only the reproduction
fan-out (``flows/fanout.py``, ``flows/reproduce.py``, lazily), the command line and the
benchmarks do.
"""
