"""Percona's LDAP-login benchmark on PostgreSQL: connect / authenticate / SELECT 1 / disconnect loops.

Method: a lab with `--with postgres` (its own, on --base-port); for each client count, first as that
many users in one process (gevent: Percona's threads), then as that many worker processes of one user
each (`authbench run --workers N`: Percona's processes). Every cell is `authbench run --target lab:postgres`
with a pattern of N clients × enough logins for about --logins logins in all; the table gives throughput,
the median and mean login time, time relative to one client (Percona's log-scale figure), the sockets
left in TIME_WAIT, and the CPU the database (postmaster and its reaped backends) and slapd spent per login.

    .venv/bin/python bench/db_logins.py [--clients 1,2,4,8,16,32,64] [--process-clients 1,2,4,8]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

import psutil

from authbench_lab import lab
from authbench_lab.config import LabConfig

DEFAULT_RUN_DIR = ".authbench/bench-db-lab"
DEFAULT_BASE_PORT = 21700
DEFAULT_CLIENTS = "1,2,4,8,16,32,64"
DEFAULT_PROCESS_CLIENTS = "1,2,4,8"  # every worker process is a Python with Locust: 2 cores cap this early
DEFAULT_LOGINS = 200  # per cell, rounded up to a whole number per client
WARMUP_LOGINS = "2x10"
USERS = 1000
CELL_TIMEOUT = 600.0


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of the processes and of their reaped children (PostgreSQL's per-login backends)."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _children_cpu() -> float:
    """CPU of the finished `authbench run` processes (Python start-up and imports included)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def authbench_run(run_dir: Path, results: Path, run_id: str, pattern: str, workers: int) -> dict:
    command = [sys.executable, "-m", "authbench", "run", "--target", "lab:postgres", "--pattern", pattern,
               "--results", str(results), "--run-id", run_id]
    if workers > 1:
        command += ["--workers", str(workers)]
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(run_dir)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=CELL_TIMEOUT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"db_logins: {run_id} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads((results / run_id / "summary.json").read_text())["cells"][0]


def measure(run_dir: Path, results: Path, mode: str, clients: int, logins: int, servers: dict[str, int]) -> dict:
    runs = max(1, -(-logins // clients))
    before = {name: cpu_seconds([pid]) for name, pid in servers.items()}
    client_before = _children_cpu()
    cell = authbench_run(run_dir, results, f"{mode}-{clients}", f"{clients}x{runs}",
                         clients if mode == "processes" else 1)
    summary = cell["summary"]
    tests = summary["tests"]
    cpu = {name: (cpu_seconds([pid]) - before[name]) * 1000 / max(tests, 1) for name, pid in servers.items()}
    cpu["client"] = (_children_cpu() - client_before) * 1000 / max(tests, 1)
    return {"mode": mode, "clients": clients, "tests": tests, "errors": summary["errors"], "tps": summary["tps"],
            "median_ms": summary["median_ms"], "mean_ms": summary["mean_ms"],
            "time_wait": cell.get("time_wait_after"), "cpu_ms_per_login": cpu}


def table(rows: list[dict]) -> list[str]:
    base = {row["mode"]: row["mean_ms"] for row in rows if row["clients"] == 1}
    lines = ["| mode | clients | logins | errors | logins/s | median ms | mean ms | time vs 1 client | "
             "TIME_WAIT after | postgres CPU ms/login | slapd CPU ms/login | client CPU ms/login |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        relative = row["mean_ms"] / base[row["mode"]] if base.get(row["mode"]) else float("nan")
        cpu = row["cpu_ms_per_login"]
        lines.append(f"| {row['mode']} | {row['clients']} | {row['tests']} | {row['errors']} | {row['tps']:.1f} | "
                     f"{row['median_ms']:.1f} | {row['mean_ms']:.1f} | {relative:.2f} | {row['time_wait']} | "
                     f"{cpu['postgres']:.2f} | {cpu['ldap']:.2f} | {cpu['client']:.2f} |")
    return lines


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for mode in ("threads", "processes"):
        points = [row for row in rows if row["mode"] == mode]
        if points:
            base = points[0]["mean_ms"]
            axis.plot([p["clients"] for p in points], [p["mean_ms"] / base for p in points], marker="o", label=mode)
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("concurrent clients")
    axis.set_ylabel("mean login time relative to 1 client")
    axis.set_title("PostgreSQL logins checked by LDAP")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default=DEFAULT_CLIENTS)
    parser.add_argument("--process-clients", default=DEFAULT_PROCESS_CLIENTS)
    parser.add_argument("--logins", type=int, default=DEFAULT_LOGINS)
    parser.add_argument("--run-dir", default=DEFAULT_RUN_DIR)
    parser.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT)
    parser.add_argument("--out", default="results/bench-db-logins")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    config = LabConfig(run_dir=Path(args.run_dir), base_port=args.base_port, backends=["local"], users=USERS,
                       extras=["postgres"])
    lab.up(config)
    try:
        servers = {row["name"]: row["pid"] for row in lab.status(config.run_dir) if row["name"] in ("postgres", "ldap")}
        authbench_run(config.run_dir, out, "warmup", WARMUP_LOGINS, 1)
        rows = [measure(config.run_dir, out, "threads", int(n), args.logins, servers) for n in args.clients.split(",")]
        rows += [measure(config.run_dir, out, "processes", int(n), args.logins, servers)
                 for n in args.process_clients.split(",")]
    finally:
        lab.down(config.run_dir)
    lines = [f"measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC on {platform.node()}: "
             f"{os.cpu_count()} cores, {platform.platform()}, {psutil.virtual_memory().total / 2**30:.0f} GiB", "",
             *table(rows)]
    (out / "table.md").write_text("\n".join(lines) + "\n")
    (out / "rows.json").write_text(json.dumps(rows, indent=2))
    plot(rows, out / "relative-time.png")
    print("\n".join(lines))
    print(f"\nplot: {out / 'relative-time.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
