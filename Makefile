PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml setup.py src/kanedyn/dynamics/_fastcall.c
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m kanedyn demo --out demo_output

# two worker processes, a test file each at a time: on a cold numba cache the suite is
# mostly compilation, which then runs on both cores (483 s -> 280 s on 2 cores)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# the API reference and the guide, as HTML in docs/_build/html; warnings (a broken
# cross-reference, a malformed docstring) are errors. KANEDYN_DOCS_EXECUTE=auto also runs
# the notebooks to show their outputs (about a minute more)
docs: $(STAMP)
	$(BIN)/python -m sphinx -b html -n -W --keep-going docs docs/_build/html

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples

clean:
	rm -rf $(VENV) demo_output docs/_build
