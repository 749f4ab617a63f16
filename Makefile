# pulsarlab: `make lab` sets up and opens the lab; `make test` sets up and runs every test.
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
# one stamp per set of extras: `make lab` installs what the labs need, `make test` (and `make install`) adds the
# test tools; the test install covers the lab's, so it leaves both stamps
LAB_EXTRAS  := lab,spark
TEST_EXTRAS := lab,spark,test
LAB_STAMP   := $(VENV)/.installed-lab
TEST_STAMP  := $(VENV)/.installed-test
# JupyterLab's settings defaults for this environment (no news prompt, no update check): overrides.d in the prefix
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.d/pulsarlab.json
# the Jupyter server extension that serves plotly's widget bundle (pulsarlab_widgets.plotly_server): its enabling
# config in the prefix (pip's editable install does not install data files)
SERVER_CONFIG := $(VENV)/etc/jupyter/jupyter_server_config.d/pulsarlab.json
GOLDEN  := $(or $(wildcard ../shared/golden/*.jsonl),$(wildcard tests/golden/*.jsonl tests/golden/*.jsonl.gz))
PYTEST_ARGS ?=
# `make test STRESS=4`: the tests with 4 busy processes beside them (a slow, shared machine), stopped when they end
STRESS  ?= 0
STRESS_S := 5400

export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

NEED_311 = import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11) else \
  f"pulsarlab needs Python 3.11 or newer; {sys.executable} is {v.major}.{v.minor}.{v.micro}. Run: make PYTHON=python3.11 ...")

.PHONY: install lab present site test test-fast lint chromium conformance bench clean
.DELETE_ON_ERROR:

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; pulsarlab needs Python 3.11 or newer" >&2; exit 1; }
	@$(PYTHON) -c '$(NEED_311)'
	$(PYTHON) -m venv $(VENV)

$(LAB_STAMP): pyproject.toml setup.py | $(BIN)/python
	@$(BIN)/python -c '$(NEED_311)'
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(LAB_EXTRAS)]"
	touch $@

$(TEST_STAMP): pyproject.toml setup.py | $(BIN)/python
	@$(BIN)/python -c '$(NEED_311)'
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(TEST_EXTRAS)]"
	touch $@ $(LAB_STAMP)

$(LAB_SETTINGS): jupyter/lab-overrides.json | $(BIN)/python
	mkdir -p $(@D)
	cp jupyter/lab-overrides.json $@

$(SERVER_CONFIG): jupyter/jupyter_server_config.d/pulsarlab.json | $(BIN)/python
	mkdir -p $(@D)
	cp jupyter/jupyter_server_config.d/pulsarlab.json $@

# everything: the lab, Spark and the test tools (what `make test` installs)
install: $(TEST_STAMP) $(LAB_SETTINGS) $(SERVER_CONFIG)

# JupyterLab on labs/ at http://127.0.0.1:8888/lab (PORT=N for another port) with a token printed in the URL
lab: $(LAB_STAMP) $(LAB_SETTINGS) $(SERVER_CONFIG)
	$(BIN)/python -m jupyter lab --ip 127.0.0.1 $(if $(PORT),--port $(PORT)) --ServerApp.root_dir=labs \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

# `make present LAB=01`: the lab whose file name starts with 01, served with the code hidden (pulsarlab present)
present: $(LAB_STAMP) $(LAB_SETTINGS) $(SERVER_CONFIG)
	@test -n "$(LAB)" || { echo "error: say which lab, e.g. make present LAB=01" >&2; exit 1; }
	@set -- $(wildcard labs/$(LAB)*.ipynb); \
	  test $$# -eq 1 || { echo "error: LAB=$(LAB) matches $$# labs in labs/ (need exactly one): $$*" >&2; exit 1; }; \
	  $(BIN)/pulsarlab present "$$1" $(if $(PORT),--port $(PORT))

# `make site`: every lab executed and written as an offline page into site/ (site/index.html lists them)
site: $(LAB_STAMP)
	$(BIN)/pulsarlab export labs/*.ipynb --out-dir site

chromium:
	@if command -v chromium >/dev/null 2>&1; then \
	  echo "chromium: $$(command -v chromium)"; \
	else \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "chromium: installing Debian's chromium with apt-get"; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium && \
	  command -v chromium >/dev/null 2>&1 || { echo "error: chromium is still missing after apt-get install" >&2; exit 1; }; \
	fi

# ruff (lint + format), the import contracts of pyproject.toml (the layers of docs/architecture.md) and mypy, strict,
# on the packages [tool.mypy] lists
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

test: install chromium lint
	@mkdir -p .test-artifacts
	@case "$(STRESS)" in ''|*[!0-9]*) echo "error: STRESS=$(STRESS): say how many busy processes, e.g. STRESS=4" >&2; exit 1;; esac
	@busy=; trap 'test -z "$$busy" || kill $$busy 2>/dev/null; wait' EXIT; trap 'exit 130' INT TERM; \
	  n=$(STRESS); while [ $$n -gt 0 ]; do \
	    timeout $(STRESS_S) $(BIN)/python -c 'while True: pass' & busy="$$busy $$!"; n=$$((n - 1)); \
	  done; \
	  test -z "$$busy" || echo "make test: $(STRESS) busy processes beside the tests (at most $(STRESS_S) s):$$busy"; \
	  $(BIN)/python -m pytest --junitxml=.test-artifacts/junit.xml --durations=40 $(PYTEST_ARGS)

# the inner loop while changing the model: lint and every test that starts no browser, no Spark, no notebook kernel
# and no pulsarlab serve (the markers of pyproject.toml); `make test` still runs everything
test-fast: install lint
	$(BIN)/python -m pytest -m "not (browser or spark or notebook or serve)" --durations=15 $(PYTEST_ARGS)

conformance: $(LAB_STAMP)
	@test -n "$(GOLDEN)" || { echo "error: no golden files in ../shared/golden/ or tests/golden/" >&2; exit 1; }
	$(BIN)/pulsarlab conformance $(GOLDEN)

bench: install
	@test -n "$(wildcard bench/*.py)" || { echo "error: no benchmarks in bench/" >&2; exit 1; }
	@set -e; for b in $(wildcard bench/*.py); do echo "== $$b"; $(BIN)/python "$$b"; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .hypothesis .test-artifacts site spark-warehouse metastore_db derby.log build dist
