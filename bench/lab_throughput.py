"""How many full SSO logins per second each lab backend serves through its SP, and the lab's memory.

Method: one lab with all backends; for each concurrency level, the backends take turns (so drift on
this shared machine hits them alike); each cell runs `--duration` seconds or `--max-logins` logins,
whichever ends first, with that many client threads (spread over two generator processes) doing
complete SP-initiated logins, empty cookie jar every time as in the 2012 method. The generator shares
the machine's cores with the lab, so its CPU share is printed beside every figure, and the lab's CPU
per login (IdP nodes, SP, HAProxy, slapd, stores) is reported as the figure that does not depend on it.

    .venv/bin/python bench/lab_throughput.py [--concurrency 2,8,16] [--duration 15]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import platform
import resource
import statistics
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import psutil

from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import sso_login
from authbench_lab import lab
from authbench_lab.config import BACKENDS, LabConfig, password_for, username

DEFAULT_RUN_DIR = ".authbench/bench-lab"
DEFAULT_BASE_PORT = 21000
DEFAULT_CONCURRENCY = "2,8,16"
DEFAULT_DURATION = 15.0
DEFAULT_MAX_LOGINS = 5000
WARMUP_LOGINS = 20  # per backend, before anything is measured (imports, connection pools, caches)
GENERATOR_PROCESSES = 2  # the clients are spread over this many processes so one GIL does not cap them


def lab_processes(run_dir: Path) -> dict[str, list[psutil.Process]]:
    """Every process of every lab component, gunicorn workers included."""
    found: dict[str, list[psutil.Process]] = {}
    for component in lab.status(run_dir):
        try:
            parent = psutil.Process(component["pid"])
            found[component["name"]] = [parent, *parent.children(recursive=True)]
        except (psutil.NoSuchProcess, TypeError):
            continue
    return found


def cpu_seconds(processes: dict[str, list[psutil.Process]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for name, group in processes.items():
        total = 0.0
        for proc in group:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = proc.cpu_times()
                total += times.user + times.system
        totals[name] = total
    return totals


def memory_mib(processes: dict[str, list[psutil.Process]]) -> tuple[float, float]:
    """(RSS, PSS) in MiB: RSS counts pages the forked gunicorn workers share once per process, PSS splits them."""
    rss = pss = 0
    for group in processes.values():
        for proc in group:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                info = proc.memory_full_info()
                rss, pss = rss + info.rss, pss + info.pss
    return rss / 2**20, pss / 2**20


def _generate(job: tuple[str, str, int, float, int, int, int]) -> tuple[list[float], dict[str, int], float]:
    """One generator process: `threads` clients logging in until the deadline or their share of logins."""
    url, ca_cert, threads, deadline, logins, users, offset = job
    counter = iter(range(offset, offset + logins))
    lock = threading.Lock()
    latencies: list[float] = []
    errors: dict[str, int] = {}
    cpu_before = _generator_cpu()

    def client() -> None:
        browser = FastBrowser(verify=ca_cert)
        while time.time() < deadline:
            with lock:
                index = next(counter, None)
            if index is None:
                return
            user = username(index % users, users)
            browser.clear_cookies()
            start = time.perf_counter()
            outcome = sso_login(browser, url, user, password_for(user))
            elapsed = time.perf_counter() - start
            with lock:
                if outcome.ok:
                    latencies.append(elapsed)
                else:
                    errors[outcome.reason] = errors.get(outcome.reason, 0) + 1

    with ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(client) for _ in range(threads)]:
            future.result()
    return latencies, errors, _generator_cpu() - cpu_before


def run_cell(pool: ProcessPoolExecutor, config: LabConfig, backend: str, threads: int, duration: float,
             max_logins: int) -> dict:
    """`threads` concurrent clients spread over the generator processes, for a bounded time and count."""
    processes = min(threads, GENERATOR_PROCESSES)
    deadline = time.time() + duration
    share = max_logins // processes
    jobs = [(config.sp_url(backend) + "/secure/", str(config.ca_cert), threads // processes + (i < threads % processes),
             deadline, share, config.users, i * share) for i in range(processes)]
    started = time.perf_counter()
    parts = list(pool.map(_generate, jobs))
    wall = time.perf_counter() - started
    latencies = sorted(latency for part in parts for latency in part[0])
    errors: dict[str, int] = {}
    for part in parts:
        for reason, count in part[1].items():
            errors[reason] = errors.get(reason, 0) + count
    return {
        "logins": len(latencies),
        "errors": sum(errors.values()),
        "error_reasons": errors,
        "wall": wall,
        "rate": len(latencies) / wall if wall else 0.0,
        "median_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000 if latencies else float("nan"),
        "generator_cpu": sum(part[2] for part in parts),
    }


def _generator_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _group(name: str) -> str:
    """Component → what the CPU column reports it as."""
    if name.endswith("/sp"):
        return "sp"
    if "/idp-" in name:
        return "idp"
    return name.split("-")[0]  # ldap, memcached, redis, lb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default=DEFAULT_RUN_DIR)
    parser.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--concurrency", default=DEFAULT_CONCURRENCY)
    parser.add_argument("--duration", type=float, default=DEFAULT_DURATION)
    parser.add_argument("--max-logins", type=int, default=DEFAULT_MAX_LOGINS)
    parser.add_argument("--keep", action="store_true", help="leave the lab running afterwards")
    args = parser.parse_args()
    backends = args.backends.split(",")
    levels = [int(level) for level in args.concurrency.split(",")]

    config = LabConfig(run_dir=Path(args.run_dir), base_port=args.base_port, users=args.users, backends=backends)
    began = time.perf_counter()
    lab.up(config)
    print(f"lab up ({len(backends)} clusters) in {time.perf_counter() - began:.1f} s")
    pool = ProcessPoolExecutor(GENERATOR_PROCESSES)
    try:
        processes = lab_processes(config.run_dir)
        for backend in backends:
            run_cell(pool, config, backend, 2, 30.0, WARMUP_LOGINS)
        rss, pss = memory_mib(processes)
        print(f"lab memory after warm-up: {rss:.0f} MiB RSS, {pss:.0f} MiB PSS in "
              f"{sum(len(g) for g in processes.values())} processes")
        rows = []
        for threads in levels:
            for backend in backends:
                before = cpu_seconds(processes)
                cell = run_cell(pool, config, backend, threads, args.duration, args.max_logins)
                after = cpu_seconds(processes)
                cpu: dict[str, float] = {}
                for name in after:
                    cpu[_group(name)] = cpu.get(_group(name), 0.0) + after[name] - before.get(name, 0.0)
                cell.update(backend=backend, threads=threads, cpu=cpu,
                            lab_cpu_ms=sum(cpu.values()) * 1000 / max(cell["logins"], 1))
                rows.append(cell)
                share = {k: round(v / cell["wall"], 2) for k, v in sorted(cpu.items()) if v > 0.05}
                print(f"{backend:<10} {threads:>3} threads: {cell['rate']:7.1f} logins/s  median "
                      f"{cell['median_ms']:6.1f} ms  p99 {cell['p99_ms']:6.1f} ms  errors {cell['errors']}  "
                      f"lab CPU {cell['lab_cpu_ms']:.1f} ms/login  cores used: generator "
                      f"{cell['generator_cpu'] / cell['wall']:.2f} {share}", flush=True)
        rss, pss = memory_mib(processes)
        print(f"\nlab memory after the run: {rss:.0f} MiB RSS, {pss:.0f} MiB PSS")
        print(f"\n{datetime.date.today()} on {platform.node()}: {psutil.cpu_count()} cores, "
              f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}\n")
        print("| backend | best logins/s | at threads | median ms | p99 ms | lab CPU ms/login (median of cells) "
              "| errors |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for backend in backends:
            best = max((r for r in rows if r["backend"] == backend), key=lambda r: r["rate"])
            errors = sum(r["errors"] for r in rows if r["backend"] == backend)
            cost = statistics.median(r["lab_cpu_ms"] for r in rows if r["backend"] == backend)
            print(f"| {backend} | {best['rate']:.1f} | {best['threads']} | {best['median_ms']:.1f} | "
                  f"{best['p99_ms']:.1f} | {cost:.1f} | {errors} |")
    finally:
        pool.shutdown()
        if not args.keep:
            lab.down(config.run_dir)


if __name__ == "__main__":
    main()
