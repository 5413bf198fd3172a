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

DEMO_BACKENDS := terracotta memcached repcached stateless local
DEMO_PATTERN := 2x50,10x20
DEMO_WARMUP := 5s

# The lab with all five backends, the cluster checks, a scaled-down 2012 comparison per backend, its report.
demo: setup
	$(BIN)/authbench lab up --backend all
	@status=0; stamp=$$(date +%Y%m%d-%H%M%S); \
	$(BIN)/authbench lab check || status=1; \
	for backend in $(DEMO_BACKENDS); do \
	  echo; echo "== $$backend: $(DEMO_PATTERN), warm-up $(DEMO_WARMUP)"; \
	  $(BIN)/authbench run --target lab:$$backend --pattern $(DEMO_PATTERN) --warmup $(DEMO_WARMUP) \
	    --results results/demo-$$stamp --run-id $$backend || status=1; \
	done; \
	echo; $(BIN)/authbench report results/demo-$$stamp || status=1; \
	$(BIN)/authbench lab down; exit $$status

bench: setup
	$(BIN)/python bench/lab_throughput.py

clean:
	-$(BIN)/authbench lab down
	rm -rf $(VENV) .authbench
