# The two entry points a newcomer needs: `make demo` and `make test`.
# Both create .venv on first use and install the pinned dependency tree into it.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: demo test venv bench clean image

# The container image: one name, set here once and overridable (`make image IMAGE=registry.example.com/cos:0.1.0`).
# Built with docker when a docker daemon answers, else with podman (daemonless), else docker's own error;
# `make image CONTAINER_TOOL=podman` chooses.
# BUILD_FLAGS go to the build as they are (e.g. --build-arg PYTHON_IMAGE=..., --network host).
VERSION        := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
IMAGE          ?= cluster-object-set:$(VERSION)
CONTAINER_TOOL ?= $(shell if docker info >/dev/null 2>&1; then echo docker; \
                    else command -v podman >/dev/null 2>&1 && echo podman || command -v docker; fi)
BUILD_FLAGS    ?=

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) examples/demo.py

# Four gates, in order; the first that fails stops the run and says which it was.
test: venv
	@echo "== lint-imports: the import contracts ([tool.importlinter] in pyproject.toml)"
	@$(VENV)/bin/lint-imports --no-logo || { echo "make test: FAILED at lint-imports: an import breaks a contract (above)" >&2; exit 1; }
	@echo "== mypy: strict types of common/, webhook/, reconciler/ ([tool.mypy])"
	@$(VENV)/bin/mypy || { echo "make test: FAILED at mypy: type errors (above)" >&2; exit 1; }
	@echo "== ruff check . ([tool.ruff])"
	@$(VENV)/bin/ruff check . || { echo "make test: FAILED at ruff: lint findings (above; some fix with ruff check --fix)" >&2; exit 1; }
	@echo "== pytest"
	$(PY) -m pytest -q

image:
	@test -n "$(CONTAINER_TOOL)" || { echo "make image: neither docker nor podman is on PATH (or set CONTAINER_TOOL)" >&2; exit 1; }
	$(CONTAINER_TOOL) build $(BUILD_FLAGS) -t $(IMAGE) .

bench: venv
	for b in bench/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
