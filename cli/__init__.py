"""The ``oral`` command line: one module per command group, above the flows.

``main`` builds the parser and dispatches; ``pipeline`` (run, backfill, demo, sql, classes),
``snapshots``, ``validate``, ``choose``, ``label``, ``report`` hold the commands; ``options``
checks every option before any work starts; ``logs`` sets up the terminal and the log file.
The CLI imports the flows, tasks and the method; nothing below it imports the CLI
(tests/core/test_layering.py).
"""
