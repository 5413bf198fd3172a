"""Who may use the web UI: one account, from an env var or a file, behind Locust's own `--web-login`.

Locust's `--web-login` (Flask-Login) draws the login page and guards its routes; authbench supplies the
check. Scripts may send the same account as HTTP basic auth instead. On a non-loopback address the UI
refuses to start without an account: it can start load against any target it is given.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from flask import redirect, request, session
from flask_login import UserMixin, login_user, logout_user

from ..errors import AuthbenchError
from . import AUTH_ENV

LOGIN_PATH = "/authbench/login"
LOGOUT_PATH = "/authbench/logout"
LOGIN_TITLE = "authbench"
BAD_LOGIN = "wrong user name or password"
LOOPBACK_NAMES = ("localhost",)
# The session cookie is never sent with another site's request, not even a link followed from it (Lax would
# send it then): a cross-site POST finds no session. Login and its redirects stay on this site, so Strict
# costs only this: a link to the UI followed from another site arrives without the session (the login page).
COOKIE_SAMESITE = "Strict"


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)  # never in a repr, a log line or an error

    def check(self, username: str | None, password: str | None) -> bool:
        ok_user = hmac.compare_digest((username or "").encode(), self.username.encode())
        ok_password = hmac.compare_digest((password or "").encode(), self.password.encode())
        return ok_user and ok_password


def parse_credentials(text: str, source: str) -> Credentials:
    username, colon, password = text.strip("\r\n").partition(":")
    if not colon or not username or not password:
        raise AuthbenchError(f"{source} must hold USER:PASSWORD (both non-empty)")
    return Credentials(username, password)


def load_credentials(auth_file: str | None, environ: dict[str, str]) -> Credentials | None:
    """From `--web-auth-file` (its first line) if given, else from $AUTHBENCH_WEB_AUTH, else None."""
    if auth_file:
        try:
            first = Path(auth_file).read_text(encoding="utf-8").splitlines()[:1]
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthbenchError(f"cannot read --web-auth-file {auth_file!r}: {getattr(exc, 'strerror', None) or exc}"
                           ) from None
        return parse_credentials(first[0] if first else "", f"--web-auth-file {auth_file!r}")
    if environ.get(AUTH_ENV):
        return parse_credentials(environ[AUTH_ENV], f"${AUTH_ENV}")
    return None


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # "" or a name: it may listen on every interface


def check_exposure(host: str, credentials: Credentials | None, web_login: bool) -> None:
    """Refuse a UI that anyone on the network could use, and a login without an account to check."""
    if web_login and credentials is None:
        raise AuthbenchError(f"--web-login needs an account: set ${AUTH_ENV}=USER:PASSWORD or give --web-auth-file")
    if credentials is None and not is_loopback(host):
        raise AuthbenchError(f"refusing to serve the web UI on {host or 'every address'} without a login: "
                       f"set ${AUTH_ENV}=USER:PASSWORD or give --web-auth-file (or use --web-host 127.0.0.1)")


class _Account(UserMixin):
    def __init__(self, username: str) -> None:
        self.id = username


def install(web_ui, credentials: Credentials) -> None:
    """Wire the account into Locust's --web-login: login page, session user, and basic auth for scripts."""
    app = web_ui.app
    app.secret_key = secrets.token_hex(32)  # sessions last as long as this process
    app.config.update(SESSION_COOKIE_SAMESITE=COOKIE_SAMESITE, REMEMBER_COOKIE_SAMESITE=COOKIE_SAMESITE)
    manager = web_ui.login_manager
    web_ui.auth_args = {"username_password_callback": LOGIN_PATH, "title": LOGIN_TITLE}

    @manager.user_loader
    def load_user(user_id: str) -> _Account | None:
        return _Account(user_id) if hmac.compare_digest(user_id.encode(), credentials.username.encode()) else None

    @manager.request_loader
    def basic_auth(req) -> _Account | None:
        auth = req.authorization
        if auth is not None and auth.type == "basic" and credentials.check(auth.username, auth.password):
            return _Account(credentials.username)
        return None

    @app.route(LOGIN_PATH, methods=["POST"])
    def login_submit():
        if credentials.check(request.form.get("username"), request.form.get("password")):
            login_user(_Account(credentials.username))
            return redirect("/authbench/")
        session["auth_error"] = BAD_LOGIN
        return redirect("/login")

    @app.route(LOGOUT_PATH, methods=["GET", "POST"])
    def logout():
        logout_user()
        session.clear()
        return redirect("/login")
