"""A browser without JavaScript over a requests session: the simple, slower twin of `FastBrowser`.

Kept as a reference the fast client is measured against (bench/journey_cpu.py) and for callers that
want requests' behaviour; it speaks the same `SSOClient` protocol, so the same SSO walk drives both.
Redirects are followed here rather than by requests so each hop can be rerouted and recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlencode

import requests

from .fastbrowser import MAX_REDIRECTS, TIMEOUT, HTTPStatusError, Namer, OnRequest, TooManyRedirects
from .forms import Form, Page, resolve_url

__all__ = ["Browser", "Page", "TooManyRedirects"]


class Browser:
    def __init__(self, session: requests.Session | None = None, *, verify: bool | str = True,
                 route: Callable[[str], str] | None = None, timeout: float = TIMEOUT,
                 on_request: OnRequest | None = None) -> None:
        self.session = session or requests.Session()
        # No proxies or CA bundles from the environment: loads go straight to the target, and scanning
        # the environment on every request cost more CPU than the TLS. `verify` goes with each request.
        self.session.trust_env = False
        self.verify = verify
        self.route = route or (lambda url: url)
        self.timeout = timeout
        self.on_request = on_request
        self.history: list[tuple[str, str, int]] = []  # (method, url, status) of every hop

    def request(self, method: str, url: str, data: dict[str, str] | list[tuple[str, str]] | None = None, *,
                name: str | None = None, namer: Namer | None = None) -> Page:
        hop_name = name or url.split("?")[0]
        for hop in range(MAX_REDIRECTS + 1):
            url = self.route(url)
            started = time.perf_counter()
            try:
                response = self.session.request(method, url, data=data, allow_redirects=False, timeout=self.timeout,
                                                verify=self.verify)
            except requests.RequestException as exc:
                self._report(hop_name, method, url, 0, started, 0, exc)
                if isinstance(exc, requests.Timeout):
                    raise TimeoutError(str(exc)) from exc
                raise ConnectionError(str(exc)) from exc
            page = Page(url=url, status=response.status_code, text=response.text)
            if hop > 0 and namer is not None:
                hop_name = namer(method, url, page, hop_name)
            self.history.append((method, url, response.status_code))
            error = HTTPStatusError(f"HTTP {page.status} {page.title}") if page.status >= 400 else None
            self._report(hop_name, method, url, page.status, started, len(response.content), error)
            location = response.headers.get("Location")
            if response.status_code in (301, 302, 303, 307, 308) and location:
                if response.status_code in (301, 302, 303):
                    method, data = "GET", None
                url = resolve_url(url, location)
                continue
            return page
        raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects from {url.split('?')[0]}")

    def _report(self, name: str, method: str, url: str, status: int, started: float, length: int,
                error: BaseException | None) -> None:
        if self.on_request is not None:
            self.on_request(name, method, url, status, (time.perf_counter() - started) * 1000, length, error)

    def get(self, url: str, *, name: str | None = None, namer: Namer | None = None) -> Page:
        return self.request("GET", url, name=name, namer=namer)

    def submit(self, form: Form, values: dict[str, str] | None = None, button: str | None = None, *,
               name: str | None = None, namer: Namer | None = None) -> Page:
        pairs = form.submission(values, button)
        if form.method == "GET":
            return self.request("GET", form.action.split("?")[0] + "?" + urlencode(pairs), name=name, namer=namer)
        return self.request("POST", form.action, pairs, name=name, namer=namer)

    def clear_cookies(self) -> None:
        self.session.cookies.clear()

    def forget_cookies(self, where: Callable[[str, str, str], bool]) -> None:
        """Drop the cookies for which where(host, path, name) is true."""
        jar = self.session.cookies
        for cookie in list(jar):
            if where(cookie.domain, cookie.path, cookie.name):
                jar.clear(cookie.domain, cookie.path, cookie.name)

    def cookie_names(self) -> list[str]:
        return sorted({cookie.name for cookie in self.session.cookies})

    def close_connections(self) -> None:
        self.session.close()
