"""Fault injection (issue 7): a crash, a retry, a second run or a locked database never loses or
duplicates a result. Every test names the guarantee it checks; benchmarks/results/reliability/reliability.md
lists them with what is injected and how to rerun one
(``pytest tests/pipeline/reliability -k NAME``). One file per numbered point of that table
(test_rel<point>_*.py); the package was one module, tests/test_reliability.py, until issue 20.

One Prefect harness, one state folder (DuckDB file + MLflow SQLite store) and one snapshot root
serve the whole package (package-scoped fixtures, conftest.py); each test works on its own graph
name, so tests do not see each other's rows. Kills and concurrency run in child processes
(``reliability_helpers.py``): the nightly flow in a child reports to this package's Prefect
server and writes the same state folder. The state folder and the snapshot root are named with
quotes, a semicolon and SQL on purpose.

This folder is a package (``__init__.py``) so that the package scope of ``env`` and
``concurrent`` is this folder; without it pytest would widen it to the whole session.
"""
