PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP_STAMP := $(VENV)/.pip-installed

.PHONY: demo test bench lint docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# `$(call install,extras)`: the package in editable mode with those extras, by uv (5-10 s;
# pip took 68 s of `make test`'s 10-minute budget on the 2-core machine), or by pip
# where uv cannot be had
comma := ,
install = $(BIN)/python -m pip install -q 'uv>=0.4' && $(BIN)/uv pip install -q --python $(BIN)/python \
	-e '.[$(1)]' || $(BIN)/python -m pip install -q -e '.[$(1)]'

$(PIP_STAMP): $(BIN)/python pyproject.toml setup.py src/kanedyn/dynamics/_fastcall.c
	$(call install,test)
	touch $(PIP_STAMP)

# the install step: pip, then numba's disk cache filled with the kernels a first call needs
# (`kanedyn precompile`, one worker per core, ~4 min on 2 cores: issue 17's "first call in
# seconds"). The cache is numba's ordinary one, keyed by layout and sources, so an edit
# later never runs stale code
$(STAMP): $(PIP_STAMP)
	$(BIN)/python -m kanedyn precompile
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m kanedyn demo --out demo_output

# two worker processes, a test file each at a time: on a cold numba cache the suite is
# mostly compilation, which then runs on both cores (483 s -> 280 s on 2 cores). It
# compiles what it runs itself, without the precompile step before it: with that step,
# `make test` on a fresh clone took 12 min 14 s on the shared machine, over the 10-minute
# budget (docs/benchmarks.md, "First call")
#
# The suite's kernels are compiled at LLVM's -O1 (NUMBA_OPT=1) into a cache of their own:
# the same source and IEEE arithmetic (no fastmath anywhere), so the same results, compiled
# faster where compilation is the cost — side by side on a cold cache, the gauss and
# discrete-gradient loop tests took 173 s at -O1 and 208 s at numba's default -O3. Their
# own cache keeps those kernels from any other process (numba's cache index does not record
# the optimisation level): the demo, the benchmarks and `kanedyn precompile` compile and
# load -O3 code in numba's usual place
#
# Beside it, LLVM's machine-code generation runs at level 0 (KANEDYN_CODEGEN_OPT=0,
# src/kanedyn/_codegen.py): the fast instruction selector and register allocator after the
# -O1 passes. The arithmetic is the same (no fast-math flag: nothing fused or reordered);
# the suite's summed test time fell from 1227 s to 1115 s on a cold cache
# (docs/benchmarks.md, "The suite's time at stop 43")
#
# Python's bytecode is written (PYTHONDONTWRITEBYTECODE emptied, where the environment sets
# it; uv installs no .pyc): else every worker and every subprocess a test starts compiles
# sympy, scipy, matplotlib, pandas and kanedyn from source again — collecting the suite took
# 16.5 s a process without .pyc files, 11.0 s with them; importing kanedyn, sympy, scipy,
# matplotlib, pandas and hypothesis 6.5 s against 2.9 s
#
# One BLAS thread per worker (OPENBLAS_NUM_THREADS=1): with two workers on two cores,
# OpenBLAS's own threads (two per process, spinning while they wait) oversubscribe the
# cores; the worked identification example's test took 31.9 s beside a busy core against
# 17.8 s with one BLAS thread (docs/benchmarks.md, "The suite's time")
TEST_ENV := PYTHONDONTWRITEBYTECODE= NUMBA_OPT=1 KANEDYN_CODEGEN_OPT=0 NUMBA_CACHE_DIR=$(CURDIR)/$(VENV)/numba-test-cache OPENBLAS_NUM_THREADS=1
test: $(PIP_STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	$(call install,test$(comma)bench)
	@# (KANEDYN_FIRST_CALLS=compile: what is timed is the compiled code, never the reference
	@# that answers a first call on a cold cache; bench/first_call.py sets its own)
	@for f in bench/*.py; do echo "== $$f"; KANEDYN_FIRST_CALLS=compile $(BIN)/python $$f || exit 1; done

# the guide, the notebooks (run, to show their outputs: about a minute) and the API
# reference, as HTML in docs/_build/html; warnings (a broken cross-reference, a malformed
# docstring, a failing notebook) are errors, and every page is read afresh (-E) so that
# none hides in an unchanged one. KANEDYN_DOCS_EXECUTE=off renders the notebooks as
# stored, as the test of the docs build does
KANEDYN_DOCS_EXECUTE ?= auto
docs: $(STAMP)
	KANEDYN_DOCS_EXECUTE=$(KANEDYN_DOCS_EXECUTE) MPLBACKEND=Agg \
		$(BIN)/python -m sphinx -E -b html -n -W --keep-going docs docs/_build/html

lint: $(PIP_STAMP)
	$(BIN)/ruff check src tests bench examples

clean:
	rm -rf $(VENV) demo_output docs/_build
