# The README's two commands: `make demo` and `make test`. Both set up what a fresh Debian machine lacks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup tools java test test-browser test-k8s test-keycloak test-compose lint demo demo-failover \
	demo-keycloak bench clean

setup: $(STAMP)
	@deploy/setup-system.sh

# deploy/k8s/tools.sh: helm, kubeconform and the Kubernetes schemas the chart's tests use, and the tests' OpenID
# Provider, built once into /opt/authbench-cache (AUTHBENCH_TOOLS_CACHE), outside the clone. Only `make test` needs
# them, not the demo; test-compose and test-k8s build their own tools.
tools: setup
	@deploy/k8s/tools.sh test >/dev/null

# Every pytest run prints its 15 slowest tests, so a test that grows is seen at the landing that grew it.
PYTEST := $(BIN)/pytest -q --durations=15
# `make test` and `make test-browser` on two pytest-xdist workers, each with its own labs and ports, whole files per
# worker (tests/parallel.py; docs/development.md). TEST_WORKERS=0 runs them in one process.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS))

$(STAMP): requirements.txt pyproject.toml
	@deploy/setup-system.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

lint: setup
	$(BIN)/ruff check lib deploy tests bench locustfiles

test: lint tools
	$(PYTEST) -m "not browser" $(XDIST)

# The web UI and the report in Debian's headless Chromium (Playwright): runs started from the form, the verdict
# panel live and in the report, the timeline, print to PDF. Against a session lab of its own, as `make test`'s.
test-browser: setup
	$(PYTEST) -m browser $(XDIST)

# The chart on a real single-node Kubernetes cluster on this machine (root; the Kubernetes binaries are
# built once, ~25 min cold, into the same cache): images, helm install with the in-cluster lab, a pass and
# a fail verdict, results read back, full teardown. See docs/kubernetes.md.
test-k8s: setup
	@deploy/k8s/tools.sh cluster >/dev/null
	AUTHBENCH_K8S=1 $(PYTEST) tests/k8s

# Java 17 from Debian when missing (Keycloak 26.7 runs on it); Keycloak itself comes from Maven Central on first use.
java: setup
	@command -v java >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -q --no-install-recommends \
	  openjdk-17-jre-headless >/dev/null; } || { echo "authbench: install Java 17 (openjdk-17-jre-headless)" >&2; exit 2; }

# Real Keycloak in the lab (docs/keycloak.md): Keycloak from Maven Central once into /opt/authbench-cache
# (AUTHBENCH_TOOLS_CACHE), two nodes, SSO through its SP, a node stop, full teardown.
test-keycloak: java
	AUTHBENCH_KEYCLOAK=1 $(PYTEST) -s tests/keycloak

# compose.yaml checked offline by Compose for every profile, then its default and keycloak profiles for real (root;
# Docker from Debian): images from a Debian base, `docker compose up` with two workers for two backends, the cluster
# checks and a pattern, full teardown. See docs/compose.md.
test-compose: setup
	@deploy/k8s/tools.sh docker >/dev/null
	AUTHBENCH_COMPOSE=1 $(PYTEST) tests/compose

DEMO_BACKENDS := terracotta,memcached,repcached,stateless,local
DEMO_PATTERN := 2x50,10x20
DEMO_WARMUP := 5s

# A scaled-down 2012 campaign on the embedded lab: it brings the five clusters up, runs the cluster
# checks (Tests 1-3) and every backend x pattern, prints the tables, takes the lab down again and
# ends by writing the report (results/demo-<stamp>/report.html and report.md).
demo: setup
	@id=demo-$$(date +%Y%m%d-%H%M%S); \
	$(BIN)/authbench compare --backends $(DEMO_BACKENDS) --pattern $(DEMO_PATTERN) --warmup $(DEMO_WARMUP) \
	  --repeat 1 --results results --campaign-id $$id

# Test 4 on the embedded lab (docs/failover.md): returning users paced at 0.5 s while memcached-a, then
# IdP node A, stop and start again in every cluster; Tests 1-3 and Test 4 in one table, then the report.
FAILOVER_PLAN := at=3s stop memcached-a; at=6s start memcached-a; at=14s stop idp-a; at=17s start idp-a
demo-failover: setup
	@id=failover-$$(date +%Y%m%d-%H%M%S); \
	$(BIN)/authbench compare --backends $(DEMO_BACKENDS) --pattern 8x44 --pace 0.5s --warmup 0 --repeat 1 \
	  --fault '$(FAILOVER_PLAN)' --results results --campaign-id $$id

# The 2012 campaign on real Keycloak, scaled down (docs/keycloak.md): two reference backends side by side with the
# four Keycloak designs, each design's lab brought up after the previous one is down (one pair of JVMs at a time).
# Per backend: Tests 1-3, then returning users paced at 1 s, logged in during a 10 s warm-up, while node B stops and
# starts again (Test 4; `idp-b` is node B of whichever cluster is measured), CPU and memory per JVM, PostgreSQL,
# slapd and HAProxy; the report.
DEMO_KEYCLOAK_BACKENDS := terracotta,local,keycloak-owners2,keycloak-owners1,keycloak-local,keycloak-persistent
DEMO_KEYCLOAK_PLAN := at=5s stop idp-b; at=15s start idp-b
demo-keycloak: java
	@id=demo-keycloak-$$(date +%Y%m%d-%H%M%S); \
	$(BIN)/authbench compare --backends $(DEMO_KEYCLOAK_BACKENDS) --pattern 4x30 --pace 1s --warmup 10s --repeat 1 \
	  --fault '$(DEMO_KEYCLOAK_PLAN)' --results results --campaign-id $$id

bench: setup
	$(BIN)/python bench/lab_throughput.py

clean:
	-$(BIN)/authbench lab down
	rm -rf $(VENV) .authbench
