"""The real-cluster tests run only under `make test-k8s` (AUTHBENCH_K8S=1): they need root, the Kubernetes
binaries built by `deploy/k8s/tools.sh cluster` and several minutes; `make test` does not collect them."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("AUTHBENCH_K8S") == "1" else ["test_*.py"]
