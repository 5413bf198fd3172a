"""Whether the lab's balancer sends to a component again, after the fault plan started it.

A node the lab has started again answers its health check before HAProxy's next check takes it back: users a
cell starts meanwhile are all sent to the other node, and a `stop` of the restarted one then hurts nobody
(Test 4 ○ for a cluster that loses sessions). The lab says what its balancer thinks of each server
(`embedded_lab.balancer_statuses`); components behind no balancer (memcached, Redis, LDAP) have none.
"""

from __future__ import annotations

import time
from pathlib import Path

import gevent

from ...embedded_lab import balancer_statuses

BALANCER_WAIT = 10.0  # seconds the balancer may take to send to a restarted node again (it checks every second)
POLL = 0.2  # seconds between two reads
UP = "UP"  # a server the balancer sends to ("UP 1/2" is failing its checks, "DOWN 1/2" coming back)


def wait_until_balanced(lab_dir: str | Path, component: str, timeout: float = BALANCER_WAIT) -> str | None:
    """None once the lab's balancer sends to the component (or has no server for it); else what it says after
    `timeout`, as a phrase."""
    deadline = time.monotonic() + timeout
    while True:
        seen = balancer_statuses(lab_dir, component)
        if seen is not None and all(status == UP for status in seen):
            return None
        if time.monotonic() >= deadline:
            break
        gevent.sleep(POLL)
    if seen is None:
        return f"the lab's balancer could not be asked after {timeout:g} s"
    return f"the balancer does not send to it after {timeout:g} s ({', '.join(sorted(set(seen)))})"
