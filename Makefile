# The README's two commands: `make demo` and `make test`. Both set up what a fresh Debian machine lacks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test lint demo bench clean

setup: $(STAMP)
	@deploy/setup-system.sh

$(STAMP): requirements.txt pyproject.toml
	@deploy/setup-system.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

lint: setup
	$(BIN)/ruff check lib deploy tests bench locustfiles

test: lint
	$(BIN)/pytest -q

demo: setup
	$(BIN)/authbench lab up --backend all
	$(BIN)/authbench lab check; status=$$?; $(BIN)/authbench lab down; exit $$status

bench: setup
	$(BIN)/python bench/lab_throughput.py

clean:
	-$(BIN)/authbench lab down
	rm -rf $(VENV) .authbench
