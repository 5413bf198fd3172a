"""What requests the web UI answers at all: the Host it is known by, no cross-origin reads, honest errors.

The UI can start load, so other web sites the operator visits must not reach it:
- a DNS-rebinding page reaches 127.0.0.1 under a name of its own; `check_host` answers only requests
  whose Host is an IP address, `localhost`, or a name given with `--web-allowed-host`;
- Locust opens every route to cross-origin reads (flask-cors); `no_cors` takes those headers off again;
- without a login, an API call gets a 401 with a JSON body (not a redirect to an HTML page), a missing
  page a 404 (Locust's login wrapper turns every exception into a 200).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from flask import Flask, Response, jsonify, request
from flask_login import current_user

from .auth import LOOPBACK_NAMES

API_PREFIXES = ("/authbench/api/", "/authbench/failures/", "/metrics")  # answered with JSON or text, not pages
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


def install(app: Flask, allowed_names: Iterable[str] = ()) -> None:
    """Host check before every request, CORS headers removed after every one."""
    names = tuple(allowed_names)

    @app.before_request
    def check_host() -> tuple[Response, int] | None:
        if allowed_host(request.host, names):
            return None
        message = (f"Host {request.host!r} is not served here: use an IP address or localhost, or start "
                   "`authbench web --web-allowed-host NAME` for a name of yours")
        return jsonify({"ok": False, "message": message}), MISDIRECTED

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
                if request.path.startswith(API_PREFIXES):
                    answer = jsonify({"ok": False, "message": "log in first (or send HTTP basic auth)"})
                    answer.headers["WWW-Authenticate"] = 'Basic realm="authbench"'
                    return answer, 401
                return web_ui.login_manager.unauthorized()
            return view(*args, **kwargs)

        return wrapper

    return decorate
