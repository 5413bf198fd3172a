"""What connection churn leaves behind: TIME_WAIT sockets, and how much of the ephemeral range they hold."""

from __future__ import annotations

import os

PORT_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
LOW_PORTS_SHARE = 0.5  # warn when TIME_WAIT sockets hold this share of the ephemeral port range


def time_wait_count(port: int) -> int:
    """Sockets in TIME_WAIT towards `port` (what connection churn leaves behind), from /proc/net/tcp*."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as handle:
            next(handle, None)
            for line in handle:
                parts = line.split()
                if len(parts) > 3 and parts[3] == "06" and int(parts[2].rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


def ephemeral_ports() -> int:
    """How many local ports the kernel hands out to outgoing connections (Linux; 28232 by default)."""
    try:
        with open(PORT_RANGE_FILE) as handle:
            low, high = (int(part) for part in handle.read().split())
    except (OSError, ValueError):
        return 28232
    return high - low + 1


def ports_running_low(time_wait: int, available: int | None = None) -> str | None:
    """A warning when TIME_WAIT sockets hold much of the ephemeral range, else None."""
    available = available or ephemeral_ports()
    if time_wait < LOW_PORTS_SHARE * available:
        return None
    return (f"warning: {time_wait} sockets in TIME_WAIT hold {time_wait / available:.0%} of the {available} "
            "ephemeral ports; new connections may fail (keep connections open with -f, or on a test machine "
            "set net.ipv4.tcp_tw_reuse=1)")
