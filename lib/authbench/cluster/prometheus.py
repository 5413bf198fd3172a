"""Server-side figures of a user's own target from its Prometheus, per cell.

Against the lab authbench samples the servers' processes itself; a real IdP cluster runs elsewhere,
and its operators already have Prometheus. `--prometheus URL --prometheus-query NAME=PROMQL` asks it,
after each cell, for every query over the cell's measured phase (a range query at one-second steps)
and keeps mean, max and last value of every series it returns.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from ..errors import AuthbenchError

QUERY_TIMEOUT_S = 10.0
STEP_S = 1.0
MAX_SERIES = 50  # per query; a query matching more is cut (and says so)


class PrometheusError(AuthbenchError):
    """The server could not be asked or refused the query; the message says which and why."""


@dataclass(frozen=True)
class Queries:
    url: str  # base URL, e.g. http://127.0.0.1:9090
    queries: dict[str, str]  # name → PromQL

    def check(self) -> None:
        """Ask the server once (every query, instantly) so a typo fails before any load."""
        for name, query in self.queries.items():
            self._get("/api/v1/query", {"query": query}, name)

    def over(self, start: float, end: float) -> dict[str, Any]:
        """Every query over [start, end]: {name: {series: [{labels, mean, max, last, points}], …}}."""
        results: dict[str, Any] = {}
        for name, query in self.queries.items():
            try:
                data = self._get("/api/v1/query_range",
                                 {"query": query, "start": f"{start:.3f}", "end": f"{max(end, start + STEP_S):.3f}",
                                  "step": f"{STEP_S:g}"}, name)
            except PrometheusError as exc:
                results[name] = {"query": query, "error": str(exc), "series": []}
                continue
            series = [_series(item) for item in data.get("result", [])]
            results[name] = {"query": query, "series": series[:MAX_SERIES],
                             **({"cut": len(series)} if len(series) > MAX_SERIES else {})}
        return results

    def _get(self, path: str, params: dict[str, str], name: str) -> dict[str, Any]:
        url = self.url.rstrip("/") + path + "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=QUERY_TIMEOUT_S) as response:  # noqa: S310 (http(s) checked)
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            raise PrometheusError(f"query {name!r}: {_error_text(exc)}") from None
        except (OSError, ValueError) as exc:
            raise PrometheusError(f"Prometheus at {self.url} did not answer query {name!r}: {exc}") from None
        if body.get("status") != "success":
            raise PrometheusError(f"query {name!r}: {body.get('error', 'failed')}")
        return body["data"]


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        return json.load(exc).get("error", str(exc))
    except ValueError:
        return str(exc)


def _series(item: dict[str, Any]) -> dict[str, Any]:
    values = [float(v) for _, v in item.get("values", []) if v not in ("NaN", "+Inf", "-Inf")]
    return {"labels": item.get("metric", {}), "points": len(values),
            "mean": sum(values) / len(values) if values else None,
            "max": max(values) if values else None, "last": values[-1] if values else None}


def parse_queries(url: str, items: list[str]) -> Queries:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--prometheus {url!r} is not an http(s) URL")
    queries = {}
    for item in items:
        name, sep, query = item.partition("=")
        if not sep or not name.strip() or not query.strip():
            raise ValueError(f"--prometheus-query {item!r} is not NAME=PROMQL")
        queries[name.strip()] = query.strip()
    if not queries:
        raise ValueError("--prometheus needs at least one --prometheus-query NAME=PROMQL")
    return Queries(url, queries)
