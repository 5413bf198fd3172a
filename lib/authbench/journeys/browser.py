"""A browser without JavaScript over a requests session: cookies kept, redirects followed one by one.

Redirects are followed here rather than by requests so each hop can be rerouted (pin a node of a
cluster, bypassing its balancer) and recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlencode, urljoin

import requests

from .forms import Form, page_title, parse_forms

MAX_REDIRECTS = 10
TIMEOUT = 10.0  # seconds per request


@dataclass
class Page:
    url: str
    status: int
    text: str

    def forms(self) -> list[Form]:
        return parse_forms(self.text, self.url)

    @property
    def title(self) -> str:
        return page_title(self.text)


class TooManyRedirects(RuntimeError):
    pass


class Browser:
    def __init__(self, session: requests.Session | None = None, *, verify: bool | str = True,
                 route: Callable[[str], str] | None = None, timeout: float = TIMEOUT) -> None:
        self.session = session or requests.Session()
        # No proxies or CA bundles from the environment: loads go straight to the target, and scanning
        # the environment on every request cost more CPU than the TLS. `verify` goes with each request.
        self.session.trust_env = False
        self.verify = verify
        self.route = route or (lambda url: url)
        self.timeout = timeout
        self.history: list[tuple[str, str, int]] = []  # (method, url, status) of every hop

    def request(self, method: str, url: str, data: dict[str, str] | None = None) -> Page:
        for _ in range(MAX_REDIRECTS + 1):
            url = self.route(url)
            response = self.session.request(method, url, data=data, allow_redirects=False, timeout=self.timeout,
                                            verify=self.verify)
            self.history.append((method, url, response.status_code))
            location = response.headers.get("Location")
            if response.status_code in (301, 302, 303, 307, 308) and location:
                if response.status_code in (301, 302, 303):
                    method, data = "GET", None
                url = urljoin(url, location)
                continue
            return Page(url=url, status=response.status_code, text=response.text)
        raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects from {url}")

    def get(self, url: str) -> Page:
        return self.request("GET", url)

    def submit(self, form: Form, values: dict[str, str] | None = None, button: str | None = None) -> Page:
        data = {**form.fields, **(values or {})}
        if button is not None:
            data[button] = form.buttons.get(button, "")
        if form.method == "GET":
            return self.request("GET", form.action.split("?")[0] + "?" + urlencode(data))
        return self.request("POST", form.action, data)
