# The two entry points a newcomer needs: `make demo` and `make test`.
# Both create .venv on first use and install the pinned dependency tree into it.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: demo test venv bench clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) examples/demo.py

test: venv
	$(PY) -m pytest -q

bench: venv
	for b in bench/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
