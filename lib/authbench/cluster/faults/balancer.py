"""Whether the lab's balancer sends to a component again, after the fault plan started it.

A node the lab has started again answers its health check before HAProxy's next check takes it back: users a
cell starts meanwhile are all sent to the other node, and a `stop` of the restarted one then hurts nobody
(Test 4 ○ for a cluster that loses sessions). The lab's HAProxy lists every server in its statistics (the
`lb` component's URL, `;csv`), its backends named after the cluster and its servers after the component
(`local-idp` / `idp-a` for `local/idp-a`); components behind no balancer (memcached, Redis, LDAP) are left out.
"""

from __future__ import annotations

import csv
import time
import urllib.request
from pathlib import Path

import gevent

BALANCER_WAIT = 10.0  # seconds the balancer may take to send to a restarted node again (it checks every second)
FETCH_TIMEOUT = 2.0  # seconds for one read of the balancer's statistics
POLL = 0.2  # seconds between two reads
UP = "UP"  # a server the balancer sends to ("UP 1/2" is failing its checks, "DOWN 1/2" coming back)


def statuses(lab_dir: str | Path, component: str) -> list[str] | None:
    """The balancer's status of each of its servers that is the component; [] when it has none, None when the
    lab has no balancer to ask or its statistics cannot be read."""
    from ...embedded_lab import state

    cluster, sep, name = component.partition("/")
    url = ((state(lab_dir) or {}).get("components", {}).get("lb") or {}).get("url")
    if not sep or not url:
        return []
    try:
        with urllib.request.urlopen(f"{url};csv", timeout=FETCH_TIMEOUT) as answer:  # noqa: S310 - the lab's own URL
            text = answer.read().decode(errors="replace")
    except (OSError, ValueError):
        return None
    rows = csv.DictReader(line.removeprefix("# ") for line in text.splitlines())
    return [row.get("status") or "" for row in rows
            if (row.get("pxname") or "").startswith(f"{cluster}-") and row.get("svname") == name]


def wait_until_balanced(lab_dir: str | Path, component: str, timeout: float = BALANCER_WAIT) -> str | None:
    """None once the lab's balancer sends to the component (or has no server for it); else what it says after
    `timeout`, as a phrase."""
    deadline = time.monotonic() + timeout
    while True:
        seen = statuses(lab_dir, component)
        if seen is not None and all(status == UP for status in seen):
            return None
        if time.monotonic() >= deadline:
            break
        gevent.sleep(POLL)
    if seen is None:
        return f"the lab's balancer could not be asked after {timeout:g} s"
    return f"the balancer does not send to it after {timeout:g} s ({', '.join(sorted(set(seen)))})"
