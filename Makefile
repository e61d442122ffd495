# The two commands: `make demo` and `make test`. Each sets up .venv by itself.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-oldest venv clean

# The ecosystem libraries (tests/test_ecosystem.py) go in without their jax dependency: ember is
# their jax (requirements-ecosystem.txt says why each flag).
$(STAMP): pyproject.toml requirements-ecosystem.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,mpi]'
	$(PY) -m pip install -q --no-deps --ignore-requires-python -r requirements-ecosystem.txt
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -n auto tests

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
