"""What requests the web UI answers at all: the Host it is known by, no cross-origin reads, honest errors.

The UI can start load, so other web sites the operator visits must not reach it:
- a DNS-rebinding page reaches 127.0.0.1 under a name of its own; `check_host` answers only requests
  whose Host is an IP address, `localhost`, or a name given with `--web-allowed-host`;
- Locust opens every route to cross-origin reads (flask-cors); `no_cors` takes those headers off again;
- a state-changing request (POST…) another site's page sent — a plain cross-site form needs no CORS — is
  refused (403) on every route, Locust's `/stop`, `/stats/reset`, `/user` and `/swarm` included: browsers name
  its origin (`Origin`, or `Sec-Fetch-Site` where they send no Origin); scripts, which send neither, pass;
- no page may be framed by another (clickjacking): `frame-ancestors 'none'` and `X-Frame-Options: DENY` on
  every answer;
- without a login, an API call gets a 401 with a JSON body (not a redirect to an HTML page), a missing
  page a 404 (Locust's login wrapper turns every exception into a 200).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, jsonify, request
from flask_login import current_user

from .auth import LOOPBACK_NAMES

API_PREFIXES = ("/authbench/api/", "/authbench/failures/", "/metrics")  # answered with JSON or text, not pages
FAILURE_EXAMPLE = re.compile(r"^/authbench/runs/[^/]+/(runs/[^/]+/)?failures/")  # what a served report links to
FORBIDDEN = 403
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
OTHER_SITES = ("cross-site", "same-site")  # Sec-Fetch-Site values of a request another site's page sent
FRAME_POLICY = "frame-ancestors 'none'"
MISDIRECTED = 421  # RFC 9110: this server is not the one for that Host
CORS_HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Headers",
                "Access-Control-Allow-Methods", "Access-Control-Expose-Headers")


def host_name(host_header: str) -> str:
    """The name or address of a Host header, without port or IPv6 brackets, lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_host(host_header: str, names: Iterable[str] = ()) -> bool:
    """An IP address (nobody can rebind one), a loopback name, or a name the operator configured."""
    host = host_name(host_header)
    if host in LOOPBACK_NAMES or host in {name.lower() for name in names}:
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def foreign_origin(req: Any) -> str | None:
    """The other site a request came from, or None when it came from this one or from no browser page."""
    origin = req.headers.get("Origin")
    if origin is not None:
        return None if urlsplit(origin).netloc == req.host else origin
    site = req.headers.get("Sec-Fetch-Site", "")
    return f"a {site} page" if site in OTHER_SITES else None


def answers_401(path: str) -> bool:
    """Routes a script or a link reads (JSON, plain text): a 401 without a login, not the login page."""
    return path.startswith(API_PREFIXES) or FAILURE_EXAMPLE.match(path) is not None


def install(app: Flask, allowed_names: Iterable[str] = ()) -> None:
    """Host and same-site checks before every request; CORS headers off and framing refused after every one."""
    names = tuple(allowed_names)

    @app.before_request
    def check_host() -> tuple[Response, int] | None:
        if allowed_host(request.host, names):
            return None
        message = (f"Host {request.host!r} is not served here: use an IP address or localhost, or start "
                   "`authbench web --web-allowed-host NAME` for a name of yours")
        return jsonify({"ok": False, "message": message}), MISDIRECTED

    @app.before_request
    def same_site_only() -> tuple[Response, int] | None:
        foreign = foreign_origin(request) if request.method in STATE_CHANGING else None
        if foreign is None:
            return None
        message = f"requests from {foreign} are refused: use this UI's own page"
        return jsonify({"ok": False, "success": False, "message": message}), FORBIDDEN

    @app.after_request
    def no_framing(response: Response) -> Response:
        response.headers["X-Frame-Options"] = "DENY"
        policy = response.headers.get("Content-Security-Policy")
        if not policy:
            response.headers["Content-Security-Policy"] = FRAME_POLICY
        elif "frame-ancestors" not in policy:
            response.headers["Content-Security-Policy"] = f"{policy}; {FRAME_POLICY}"
        return response

    def no_cors(response: Response) -> Response:
        for header in CORS_HEADERS:
            response.headers.pop(header, None)
        return response

    # Flask runs after-request functions last-registered first: at the front, this one runs after flask-cors's.
    app.after_request_funcs.setdefault(None, []).insert(0, no_cors)


def protected(web_ui: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Our routes' guard: with a login, a 401 (JSON, for API calls) or the login page; errors stay errors."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if web_ui.web_login and not current_user.is_authenticated:
                if answers_401(request.path):
                    answer = jsonify({"ok": False, "message": "log in first (or send HTTP basic auth)"})
                    answer.headers["WWW-Authenticate"] = 'Basic realm="authbench"'
                    return answer, 401
                return web_ui.login_manager.unauthorized()
            return view(*args, **kwargs)

        return wrapper

    return decorate
