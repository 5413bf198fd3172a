"""privacyIDEA's user-cache benchmark (its blog's method, scaled): sequential /validate/check, every user twice.

Method: a lab with `--with privacyidea` and --users N; for each scenario the lab's privacyIDEA is set up
with its user cache off or on (`--privacyidea-cache`), then one client checks user000..N-1 and then the
same users again (SPASS tokens, so nothing but the user lookup and the PIN differ), 2N checks in a row.
Cache off: both passes look every user up in LDAP. Cache on, first pass = cold (fills it), second = warm.
Prints the median of each pass and writes the response time against request index as a plot.

    .venv/bin/python bench/privacyidea_cache.py [--users 200] [--cache-seconds 600]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from authbench_lab import lab
from authbench_lab.config import LabConfig

DEFAULT_USERS = 200
DEFAULT_CACHE_SECONDS = 600
DEFAULT_RUN_DIR = ".authbench/bench-privacyidea-lab"
DEFAULT_BASE_PORT = 21800
RUN_TIMEOUT = 3600.0


def scenario(args: argparse.Namespace, out: Path, cache: int) -> list[float]:
    """Lab with this cache setting; 2N sequential checks; their durations in ms, in request order."""
    config = LabConfig(run_dir=Path(args.run_dir), base_port=args.base_port, backends=["local"], users=args.users,
                       extras=["privacyidea"], privacyidea_cache=cache)
    lab.down(config.run_dir)
    lab.up(config)
    run_id = f"cache-{cache}"
    last = args.users - 1
    command = [sys.executable, "-m", "authbench", "run", "--target", "lab:privacyidea", "--otp-type", "spass",
               "--pattern", f"1x{2 * args.users}", "--accounts-template", f"user{{000..{last:03d}}}",
               "--results", str(out), "--run-id", run_id]
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(config.run_dir)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"privacyidea_cache: {run_id} failed: {done.stderr.strip()[-400:]}")
    with open(out / run_id / "samples.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["phase"] == "measured"]
    rows.sort(key=lambda row: float(row["start"]))
    return [float(row["duration_ms"]) for row in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=DEFAULT_USERS)
    parser.add_argument("--cache-seconds", type=int, default=DEFAULT_CACHE_SECONDS)
    parser.add_argument("--run-dir", default=DEFAULT_RUN_DIR)
    parser.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT)
    parser.add_argument("--out", default="results/bench-privacyidea-cache")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        series = {"cache off": scenario(args, out, 0), "cache on": scenario(args, out, args.cache_seconds)}
    finally:
        lab.down(Path(args.run_dir))
    n = args.users
    lines = [f"measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC on {platform.node()}: "
             f"{os.cpu_count()} cores, {platform.platform()}", "",
             f"| scenario | first pass (user000..{n - 1:03d}) median ms | second pass median ms | checks |",
             "|---|---:|---:|---:|"]
    for name, times in series.items():
        lines.append(f"| {name} | {statistics.median(times[:n]):.1f} | {statistics.median(times[n:]):.1f} | "
                     f"{len(times)} |")
    (out / "table.md").write_text("\n".join(lines) + "\n")
    plot(series, n, out / "by-request.png")
    print("\n".join(lines))
    return 0


def plot(series: dict[str, list[float]], users: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4))
    for name, times in series.items():
        axis.plot(range(len(times)), times, linewidth=0.8, label=name)
    axis.axvline(users, color="grey", linestyle=":", label="second pass starts")
    axis.set_xlabel("request index")
    axis.set_ylabel("response time (ms)")
    axis.set_title("privacyIDEA /validate/check, SPASS, one client, every user twice")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    raise SystemExit(main())
