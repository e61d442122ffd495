# The two commands: `make demo` and `make test`. Each sets up .venv by itself.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-oldest test-isa test-ecosystem venv clean

# The ecosystem libraries (tests/test_ecosystem.py) and what their own test suites import
# (tests/suites) go in without their jax dependency: ember is their jax (requirements-ecosystem.txt
# says why each flag).
$(STAMP): pyproject.toml requirements-ecosystem.txt requirements-suites.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,mpi]'
	$(PY) -m pip install -q --no-deps --ignore-requires-python -r requirements-ecosystem.txt
	$(PY) -m pip install -q --no-deps -r requirements-suites.txt
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -n auto tests

# The code generators' tests again with the instruction set capped (backends/cpu/host.py), so
# that an AVX-512 machine cannot hide an AVX2 or SSE failure; CI runs it after `make test`.
ISA_TESTS := tests/test_codegen.py tests/test_dot_fusion.py tests/test_small_dots.py \
	tests/test_vectorize.py tests/test_transpose_and_column_kernels.py tests/test_dot_split_k.py \
	tests/test_mathlib.py
test-isa: $(STAMP)
	for isa in AVX2 SSE4_2; do \
	  EMBER_FLAGS=--cpu_max_isa=$$isa $(PY) -m pytest -n auto $(ISA_TESTS) || exit 1; done

# The JAX libraries' own test suites (chex, optax, equinox, flax) on ember, compared per test id
# with JAX's outcomes (tests/suites/run.py, docs/ecosystem.md); `make test` runs a sample of them.
test-ecosystem: $(STAMP)
	$(PY) -m tests.suites.run $(SUITES)

# The same suite with the oldest supported dependencies (constraints-oldest.txt), in its own venv.
OLD := .venv-oldest
$(OLD)/.installed: pyproject.toml constraints-oldest.txt
	$(PYTHON) -m venv $(OLD)
	$(OLD)/bin/python -m pip install -q --upgrade pip
	$(OLD)/bin/python -m pip install -q -c constraints-oldest.txt -e . pytest hypothesis pytest-xdist
	touch $(OLD)/.installed

test-oldest: $(OLD)/.installed
	$(OLD)/bin/python -m pytest -n auto tests

clean:
	rm -rf $(VENV) $(OLD) build *.egg-info
