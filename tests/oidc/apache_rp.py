"""A real relying party we did not write: Apache with Debian's mod_auth_openidc, on 127.0.0.1, for tests/oidc.

Its own ServerRoot, config, pid and log files in a temporary folder (no system service, nothing under
/etc/apache2), started in the foreground and stopped by the test. Four virtual hosts, each its own port, all
the provider's client `rp-apache` (provider.mjs): `app` with the right secret, `refusing` with a wrong one (its
token request fails: the app refuses the code), `form_post` with the right secret and the form_post response
mode, `unregistered` with a redirect URI the provider does not know. Each protects /protected/ (a small page)
and leaves /open/ unprotected. docs/oidc.md shows the same config.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from process_kit import end

from ports import OIDC_RP

APACHE = "/usr/sbin/apache2"
MODULES = Path("/usr/lib/apache2/modules")
CLIENT_ID = "rp-apache"
PAGE_TEXT = "authbench protected page"
START_LIMIT = 20.0  # seconds for Apache to answer
HOSTS = {"app": OIDC_RP, "refusing": OIDC_RP + 1, "form_post": OIDC_RP + 2, "unregistered": OIDC_RP + 3}
REDIRECT_PATH = "/protected/redirect_uri"  # mod_auth_openidc's redirect URI: a path it protects, no content
# registered at the provider (provider.mjs): every host's but the unregistered one's
REDIRECT_URIS = [f"http://127.0.0.1:{port}{REDIRECT_PATH}" for name, port in HOSTS.items() if name != "unregistered"]
LOADED = ("mpm_event", "authn_core", "authz_core", "authz_user", "mime", "dir", "auth_openidc")

VHOST = """<VirtualHost 127.0.0.1:{port}>
  OIDCProviderMetadataURL {issuer}/.well-known/openid-configuration
  OIDCClientID {client_id}
  OIDCClientSecret {secret}
  OIDCRedirectURI http://127.0.0.1:{port}{redirect_path}
  OIDCCryptoPassphrase {passphrase}
  OIDCSSLValidateServer Off
  OIDCPKCEMethod S256
  OIDCScope openid
  {extra}
  <Location /protected>
    AuthType openid-connect
    Require valid-user
  </Location>
</VirtualHost>
"""


@dataclass(frozen=True)
class RP:
    root: Path
    urls: dict[str, str]  # host name → its protected URL

    def protected(self, host: str = "app") -> str:
        return self.urls[host]

    def open_page(self, host: str = "app") -> str:
        return self.urls[host].replace("/protected/", "/open/")

    def log(self) -> str:
        path = self.root / "logs" / "error.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


def config(root: Path, issuer: str, secret: str) -> str:
    user = ""
    if os.geteuid() == 0:  # Apache's children never serve as root: the nobody account, which can read root/htdocs
        group = next((name for name in ("nogroup", "nobody") if _has_group(name)), None)
        if _has_user("nobody") and group:
            user = f"User nobody\nGroup {group}\n"
    lines = [f"ServerRoot {root}", f"PidFile {root}/run/httpd.pid", f"DefaultRuntimeDir {root}/run",
             f"Mutex file:{root}/run", f"ErrorLog {root}/logs/error.log", "LogLevel warn", "ServerName 127.0.0.1",
             user, *(f"Listen 127.0.0.1:{port}" for port in HOSTS.values()),
             *(f"LoadModule {name}_module {MODULES}/mod_{name}.so" for name in LOADED),
             "TypesConfig /etc/mime.types", "DirectoryIndex index.html", f"DocumentRoot {root}/htdocs",
             f'<Directory "{root}/htdocs">\n  Require all granted\n</Directory>']
    secrets = {"app": secret, "refusing": "not-the-secret", "form_post": secret, "unregistered": secret}
    extras = {"form_post": "OIDCResponseMode form_post"}
    for name, port in HOSTS.items():
        lines.append(VHOST.format(port=port, issuer=issuer, client_id=CLIENT_ID, secret=secrets[name],
                                  redirect_path=REDIRECT_PATH, passphrase="tests-only-" + name,
                                  extra=extras.get(name, "")))
    return "\n".join(lines) + "\n"


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _has_group(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def installed() -> bool:
    return os.access(APACHE, os.X_OK) and (MODULES / "mod_auth_openidc.so").is_file()


@contextmanager
def running(issuer: str, secret: str):
    """Apache with the four hosts, until the block ends; a RuntimeError with its log if it does not answer."""
    root = Path(tempfile.mkdtemp(prefix="authbench-apache-rp-"))
    try:
        for folder in ("run", "logs", "htdocs/protected", "htdocs/open"):
            (root / folder).mkdir(parents=True)
        page = f"<!DOCTYPE html><html><head><title>Protected</title></head><body>{PAGE_TEXT}</body></html>\n"
        (root / "htdocs" / "protected" / "index.html").write_text(page)
        (root / "htdocs" / "open" / "index.html").write_text(page.replace("Protected", "Open"))
        conf = root / "httpd.conf"
        conf.write_text(config(root, issuer, secret))
        conf.chmod(0o600)  # holds the client secret; read by the parent only
        for path in (root, *root.rglob("*")):  # the children (nobody, under root) read the pages
            if path != conf:
                path.chmod(0o755 if path.is_dir() else 0o644)
        with (root / "logs" / "stdout.log").open("w") as out:
            process = subprocess.Popen([APACHE, "-f", str(conf), "-DFOREGROUND"], stdout=out, stderr=subprocess.STDOUT)
        rp = RP(root, {name: f"http://127.0.0.1:{port}/protected/" for name, port in HOSTS.items()})
        try:
            _wait(process, rp)
            yield rp
        finally:
            end(process)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _wait(process: subprocess.Popen, rp: RP) -> None:
    deadline = time.monotonic() + START_LIMIT
    while True:
        try:
            urllib.request.urlopen(rp.open_page(), timeout=2).read()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                out = (rp.root / "logs" / "stdout.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"Apache did not start: {out} {rp.log()}") from None
            time.sleep(0.1)
