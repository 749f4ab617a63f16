# pulsarlab: `make lab` sets up and opens the lab; `make test` sets up and runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
GOLDEN ?= $(firstword $(wildcard ../shared/golden) tests/golden)

export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

.PHONY: install lab test chromium conformance bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[lab,spark,test]"
	touch $@

install: $(STAMP)

lab: install
	$(BIN)/jupyter lab --ip 127.0.0.1 --ServerApp.root_dir=labs

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

test: install chromium
	$(BIN)/python -m pytest

conformance: install
	$(BIN)/pulsarlab conformance $(GOLDEN)/*.jsonl

bench: install
	$(BIN)/python bench/selectors.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
