# Two commands do their whole set-up on a fresh machine (see README):
#   make run    the nightly pipeline's demo: a simulated evolving graph, run night by night (state/demo)
#   make test   run the test suite
# and, for development: make test-fast (the core and contracts tests that are not slow)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export DO_NOT_TRACK=true
export PREFECT_SERVER_ANALYTICS_ENABLED=false
export MLFLOW_DISABLE_TELEMETRY=true

.PHONY: install run test test-fast clean

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/oral demo

# TEST_WORKERS pytest-xdist workers (one torch thread each): three on the two-core machines the suite is sized for,
# since about a fifth of the time two workers wait on child processes and servers (fresh clones on two free cores:
# 11:36 of pytest with two workers at 93b69bb, 10:53 with three at da40453, 9:19 with the longest units first
# at d26402b); each test module (a package with package-scoped fixtures, apart from tests/conftest.py's
# OWN_UNITS) stays on one worker, and the units start longest first (tests/unit_seconds.json)
TEST_WORKERS ?= 3

test: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS)

# the fast unit tests of the method and the data contracts (tests/core, tests/contracts), < 1 min:
# two workers of one torch thread each (at f8034d4 on two free cores: 29 s, against 49 s in one
# process with torch's own threads; on two cores busy with other work 74 s against 186-219 s)
FAST_WORKERS ?= 2

test-fast: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n $(FAST_WORKERS) -m "(core or contracts) and not slow" tests/core tests/contracts

clean:
	rm -rf $(VENV) .pytest_cache
