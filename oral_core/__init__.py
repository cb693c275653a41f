"""ORAL: Open-world gRAph neuraL network (Jin et al.), the method core.

Pure torch / torch_geometric / scipy / numpy / networkx: no orchestration imports.
"""
__version__ = "0.1.0"

# Bumped whenever a change to the method can change a result: part of every run's configuration
# hash, so a resumed sweep recomputes seeds that an older revision produced.
#   1: first reproduction (session 1)
#   2: validation nodes are never pseudo-label candidates
ALGORITHM_REVISION = 2
