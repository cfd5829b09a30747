# Two commands for a fresh machine:
#   make run   create .venv, install dpcd, run the workflow on config/config.yaml
#   make test  create .venv, install dpcd with its test and cluster extras, run the test suite
# and: make install (.venv with dpcd only), make docs (serve the documentation site).
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# Rules call the `dpcd` console script, so the venv goes first on PATH.
export PATH := $(BIN):$(PATH)
export NUMBA_CACHE_DIR ?= $(CURDIR)/results/.numba_cache
CORES ?= all

.PHONY: install run test ui docs dry-run lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,cluster]'
	touch $@ $(VENV)/.installed $(VENV)/.installed-docs

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

run: $(VENV)/.installed
	$(BIN)/snakemake --cores $(CORES) --configfile config/config.yaml \
		--workflow-profile config/profiles/default

dry-run: $(VENV)/.installed
	$(BIN)/snakemake -n --configfile config/config.yaml --workflow-profile config/profiles/default

# -n auto: one pytest worker per core (the workflow tests dominate; serial runs
# take twice as long on 2 cores). One numba warm-up before the workers start,
# then whole files per worker, the long workflow files first (tests/conftest.py),
# so each workflow fixture is built once. The 30 slowest
# tests are listed at the end, so that the suite's cost is visible in CI.
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder --durations=30

lint: $(VENV)/.installed-test
	$(BIN)/snakemake --lint --configfile config/config.yaml
	$(BIN)/snakefmt --check Snakefile workflow/rules

# MLflow's server job runner (7 Huey consumer processes for GenAI jobs) is of
# no use for these runs and costs more CPU than the UI itself: off.
ui: export MLFLOW_SERVER_ENABLE_JOB_EXECUTION = false
ui: $(VENV)/.installed
	$(BIN)/mlflow ui --backend-store-uri sqlite:///results/mlflow.db

# The documentation site (docs/ and config/README.md) at http://127.0.0.1:8000.
docs: $(VENV)/.installed-docs
	$(BIN)/mkdocs serve

clean:
	rm -rf results/* .snakemake
	touch results/.gitkeep

# Every solver's estimator defaults against non-private and trivial predictors
# (bench/defaults_suite.py, docs/defaults.md): the quick grid, or FULL=1 for
# the whole one; real datasets from DPCD_DATA_MIRROR when it is set.
.PHONY: defaults-suite
defaults-suite: $(VENV)/.installed
	$(BIN)/python bench/defaults_suite.py $(if $(FULL),,--quick) --search $(ARGS)
