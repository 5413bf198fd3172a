"""compose.yaml's tests run only under `make test-compose` (AUTHBENCH_COMPOSE=1), which builds Compose: the offline
checks (test_compose_config.py) and `docker compose up` for real (test_compose_up.py, root, Docker from Debian and a
few minutes). `make test` does not collect them."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("AUTHBENCH_COMPOSE") == "1" else ["test_*.py"]
