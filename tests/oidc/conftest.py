"""panva's oidc-provider (from npm, not written here) on 127.0.0.1, once per session, for the OIDC kind's tests.

`make tools` (deploy/k8s/tools.sh) installs it into the tools cache outside the clone; provider.mjs beside this
file configures it: three RPs (client_secret_basic, client_secret_post, public), accounts user000..user999 with
the lab's password rule, a login form that checks it, and a consent page; and a real RP's registration
(`rp-apache`, Apache with mod_auth_openidc: apache_rp.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from apache_rp import REDIRECT_URIS as APP_REDIRECT_URIS
from process_kit import end

from authbench_lab.config import password_for

from ports import OIDC as OIDC_PORT

VERSION = "9.13.3"  # deploy/k8s/tools.sh's OIDC_PROVIDER_VERSION
CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
MODULE = CACHE / "npm" / f"oidc-provider-{VERSION}" / "node_modules" / "oidc-provider" / "lib" / "index.js"
SCRIPT = Path(__file__).with_name("provider.mjs")
SECRET = "rp-secret-7f3c9a1e5b"  # the confidential clients' secret: the tests grep results for it
REDIRECT_URI = "http://127.0.0.1:9/authbench/callback"  # authbench's default: nothing listens there
POST_LOGOUT_REDIRECT_URI = "http://127.0.0.1:9/authbench/signed-out"  # registered for every RP, caught too
START_LIMIT = 30.0  # seconds for node to answer discovery


@dataclass(frozen=True)
class OP:
    issuer: str
    secret: str = SECRET
    redirect_uri: str = REDIRECT_URI
    post_logout_redirect_uri: str = POST_LOGOUT_REDIRECT_URI

    @property
    def target(self) -> str:
        return "oidc+" + self.issuer


@pytest.fixture(scope="session")
def op(tmp_path_factory: pytest.TempPathFactory):
    node = shutil.which("node")
    if node is None or not MODULE.is_file():
        pytest.fail(f"oidc-provider {VERSION} is not installed in {CACHE}/npm (or node is missing): run `make tools`")
    issuer = f"http://127.0.0.1:{OIDC_PORT}"
    log = tmp_path_factory.mktemp("oidc-provider") / "provider.log"
    env = {**os.environ, "OIDC_PROVIDER_MODULE": str(MODULE), "PORT": str(OIDC_PORT),
           "PASSWORD_PREFIX": password_for(""), "CLIENT_SECRET": SECRET, "REDIRECT_URI": REDIRECT_URI,
           "POST_LOGOUT_REDIRECT_URI": POST_LOGOUT_REDIRECT_URI, "APP_REDIRECT_URIS": " ".join(APP_REDIRECT_URIS)}
    with log.open("w") as out:
        process = subprocess.Popen([node, str(SCRIPT)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_LIMIT
        while True:
            try:
                urllib.request.urlopen(issuer + "/.well-known/openid-configuration", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"oidc-provider did not start: {log.read_text()[-2000:]}")
                time.sleep(0.1)
        yield OP(issuer)
    finally:
        end(process)


@pytest.fixture
def op_env(op, monkeypatch):
    """The confidential clients' secret where authbench reads it, and the lab's password rule's accounts."""
    monkeypatch.setenv("AUTHBENCH_CLIENT_SECRET", op.secret)
    return op
