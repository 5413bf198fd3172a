"""The real-Keycloak tests run only under `make test-keycloak` (AUTHBENCH_KEYCLOAK=1): two JVMs, a first start
that fetches and builds Keycloak (minutes), so `make test` does not collect them."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("AUTHBENCH_KEYCLOAK") == "1" else ["test_*.py", "owners2"]
