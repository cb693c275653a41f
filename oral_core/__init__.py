"""ORAL: Open-world gRAph neuraL network (Jin et al.), the method core.

Pure torch / torch_geometric / scipy / numpy / networkx: no orchestration imports.
"""
__version__ = "0.1.0"
