"""locustfiles/oidc_login.py under plain Locust against panva's oidc-provider: the OIDC options on Locust's
command line, --grant choosing the journey's user class, the secret from the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LOCUSTFILE = Path(__file__).resolve().parents[2] / "locustfiles" / "oidc_login.py"
WAIT_LIMIT = 120  # seconds for Locust to start, run RUN_TIME and stop
RUN_TIME = "4s"  # long enough for a login and a refresh on a loaded machine (2 s once ended before the first refresh)


def test_plain_locust_runs_the_oidc_locustfile_with_a_grant(op, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "-u", "2", "-r", "2", "-t", RUN_TIME,
         "--stop-timeout", "10", "--host", op.issuer, "--client-id", "rp-basic", "--grant", "refresh",
         "--accounts-template", "user{000..009}", "--only-summary"],
        capture_output=True, text=True, timeout=WAIT_LIMIT, cwd=tmp_path,
        env={**os.environ, "AUTHBENCH_CLIENT_SECRET": op.secret})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-2000:]
    assert "OIDC refresh" in output and "OP token (refresh)" in output and "OIDC code flow" not in output
    assert op.secret not in output
