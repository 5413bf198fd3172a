"""Base ports of the labs the tests start, kept apart from a developer's own lab (default 17000).

AUTHBENCH_TEST_PORT_SHIFT moves them all at once, so two checkouts can run their tests side by side
(a lab spans base .. base+612; keep shifted ranges below the ephemeral ports, 32768).

Under pytest-xdist every worker (gw0, gw1, …) gets its own copy of the whole plan, WORKER_SPAN lower than the
previous worker's, so each has its own labs and no two workers ever share a port.
"""

from __future__ import annotations

import os

# The plan below spans 26790 .. 32062 (Keycloak's lab at the top, only in `make test-keycloak`).
WORKER_SPAN = 5300
MAX_WORKERS = 2  # gw0 from 26790, gw1 from 21490; a third would reach the developer's own lab at 17000
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
WORKER_INDEX = int(WORKER.removeprefix("gw") or 0)
if WORKER_INDEX >= MAX_WORKERS:
    raise RuntimeError(f"tests/ports.py plans ports for {MAX_WORKERS} pytest-xdist workers; run with -n 2 or fewer")
SHIFT = int(os.environ.get("AUTHBENCH_TEST_PORT_SHIFT", "0")) - WORKER_INDEX * WORKER_SPAN

SESSION = 27000 + SHIFT  # the one all-backends lab of the test session (conftest)
SMALL = 28000 + SHIFT  # supervisor tests: a lab of their own
IDLE = 29000 + SHIFT  # CLI runs that must fail before starting anything
VARIANT = 31000 + SHIFT  # lab variants (stickiness, no client storage)
PROMETHEUS = 26900 + SHIFT  # a real Prometheus for the campaign's server-side queries
WEB = 30600 + SHIFT  # `authbench web` in the web UI's tests (a few ports from here)
LOCUST_WEB = 30650 + SHIFT  # Locust's own web UI serving /metrics (tests/test_metrics.py)
DISTRIBUTED = 26800 + SHIFT  # Locust masters and /metrics of the distributed tests (26810-26839)
LDAP_FAULT = 30000 + SHIFT  # authrate while slapd stops and starts: a small lab of its own
PYSAML2_SHARED = 27700 + SHIFT  # HAProxy over the pysaml2 IdP cluster that shares SSO sessions (tests/journeys)
PYSAML2_UNSHARED = 27701 + SHIFT  # … and over the one that does not
PYSAML2_FAILOVER = 27702 + SHIFT  # … and over a shared one whose memcached a fault plan stops (Test 4)
# Issue 15's slot (27900-27949): a `local`-only lab with --public-host. Its shared services sit at
# base+1..30 = 27436-27465, between the session lab's stateless and local clusters; its cluster at 27935-27947.
PUBLIC_HOST_LAB = 27435 + SHIFT
# `compare` bringing up its own lab in the signal tests (tests/cli/test_signals.py): backend local only,
# so it listens on base+1..30 (a gap of the session lab's plan) and base+500..512 = 27750-27762, this
# helper's slot of 27700-27999.
SIGNALS = 27250 + SHIFT
EXTRAS = 27950 + SHIFT  # a one-cluster lab with the optional servers (postgres): base .. base+45, cluster at +500
OIDC = 26950 + SHIFT  # panva's oidc-provider, the OpenID Provider of tests/oidc (one port)
OIDC_RP = 26790 + SHIFT  # Apache with mod_auth_openidc, a real RP of that provider (tests/oidc/apache_rp.py): +0..+3
STORES = 27850 + SHIFT  # two bare memcached of the lab IdP's store tests (tests/lab/test_stores.py)
# real Keycloak (tests/keycloak, `make test-keycloak`): base .. base+62, its terracotta cluster at +100..+112
KEYCLOAK = 32000 + SHIFT
