"""Issue 27's figures: logins/s per cluster at saturation, CPU per login per node, Test 4's recovery, for the
reference IdP's backends and Keycloak's designs side by side, each from one `authbench compare` campaign.

Method: two campaigns over the same backends, each design's lab brought up after the previous one is down
(cli/compare_lab.py). The saturation campaign runs USERS users back to back (no think time) for RUNS journeys each
after a warm-up: logins/s is its TPS, and each node's CPU per login is the node's CPU seconds over the measured
phase divided by the journeys. The failover campaign is `make demo-keycloak`'s: returning users paced at 1 s while
node B stops and starts again; its recovery is Test 4's "SSO worked again N s after the start". The generator
shares the machine with the lab (and, here, with other jobs): the machine's load average is printed with each.

    .venv/bin/python bench/keycloak_campaign.py [--base-port 20000] [--lab-dir DIR] [--results results]
                                                [--failover DEMO_KEYCLOAK_FOLDER]
    .venv/bin/python bench/keycloak_campaign.py --read SATURATION_FOLDER [FAILOVER_FOLDER]   # tables only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BACKENDS = "terracotta,local,keycloak-owners2,keycloak-owners1,keycloak-local,keycloak-persistent"
SATURATION = ["--pattern", "8x100", "--warmup", "60s", "--repeat", "1"]  # 60 s: a fresh JVM warms up (JIT)
FAILOVER = ["--pattern", "4x30", "--pace", "1s", "--warmup", "10s", "--repeat", "1",
            "--fault", "at=5s stop idp-b; at=15s start idp-b"]
NODES = ("idp-a", "idp-b", "keycloak-a", "keycloak-b")


def campaign(name: str, options: list[str], args: argparse.Namespace) -> Path:
    folder = Path(args.results) / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    command = [sys.executable, "-m", "authbench", "compare", "--backends", args.backends, *options,
               "--results", args.results, "--campaign-id", folder.name, "--base-port", str(args.base_port),
               "--lab-dir", args.lab_dir]
    began, load = time.time(), os.getloadavg()[0]
    subprocess.run(command, check=False)
    print(f"{name}: {time.time() - began:.0f} s, load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end", flush=True)
    return folder


def cells(folder: Path) -> dict[str, dict]:
    """backend → its first cell (one pattern, one repetition), in the campaign's order."""
    out = {}
    for backend in json.loads((folder / "campaign.json").read_text())["config"]["backends"]:
        path = folder / "runs" / backend / "summary.json"
        summary = json.loads(path.read_text()) if path.is_file() else {}
        if summary.get("cells"):
            out[backend] = summary["cells"][0]
    return out


def saturation_rows(folder: Path) -> list[str]:
    rows = ["| backend | logins/s | mean ms | errors | CPU ms per login: node A | node B | HAProxy | slapd | "
            "PostgreSQL | generator saturated |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for backend, cell in cells(folder).items():
        summary, parts = cell["summary"], (cell.get("resources") or {}).get("components") or {}

        rows.append(f"| {backend} | {summary['tps']:.2f} | {summary['mean_ms']:.0f} | {summary['errors']} | "
                    f"{per_login(parts, 'idp-a', 'keycloak-a')} | {per_login(parts, 'idp-b', 'keycloak-b')} | "
                    f"{per_login(parts, 'lb')} | {per_login(parts, 'ldap')} | {per_login(parts, 'postgres')} | "
                    f"{'yes' if (cell.get('resources') or {}).get('generator_saturated') else 'no'} |")
    return rows


def per_login(parts: dict, *names: str) -> str:
    """A component's CPU milliseconds per measured login (the first of `names` sampled), or '-'."""
    value = next((parts[n]["cpu_ms_per_journey"] for n in names if n in parts), None)
    return "-" if value is None else f"{value:.1f}"


def failover_rows(folder: Path) -> list[str]:
    rows = ["| backend | Test 4 | lost SSO | errors during | SSO again after the start (s) | node B back (s) |",
            "|---|---|---|---|---:|---:|"]
    for backend, cell in cells(folder).items():
        failover = cell.get("failover") or {}
        stop = (failover.get("faults") or [{}])[0]
        start = next((f for f in cell.get("faults") or [] if f.get("action") == "start"), {})
        during = next((w for w in failover.get("windows") or [] if w["window"] == f"after {stop.get('fault')}"), {})
        rows.append(f"| {backend} | {stop.get('test4', '?')} | {stop.get('reauthenticated_users', '?')} of "
                    f"{stop.get('logged_in_users', '?')} | {during.get('errors', '?')} of "
                    f"{during.get('journeys', '?')} | "
                    f"{stop.get('recovery_s', '?')} | {start.get('seconds', '?')} |")
    return rows


def lab_starts(folder: Path) -> list[str]:
    document = json.loads((folder / "campaign.json").read_text())
    return [f"- {', '.join(s['clusters'])}: lab up {s['seconds']} s"
            + (f", Keycloak ready {s['keycloak_seconds']} s after node A's launch" if "keycloak_seconds" in s else "")
            for s in document.get("lab_starts") or []]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=BACKENDS)
    parser.add_argument("--base-port", type=int, default=20000)
    parser.add_argument("--lab-dir", default=".authbench/bench-keycloak")
    parser.add_argument("--results", default="results")
    parser.add_argument("--read", nargs="+", metavar="FOLDER", help="only print the tables of these campaigns")
    parser.add_argument("--failover", metavar="FOLDER",
                        help="take Test 4 from this campaign (e.g. make demo-keycloak's) instead of running it")
    args = parser.parse_args()
    for folder in [*(args.read or []), *([args.failover] if args.failover else [])]:
        if not (Path(folder) / "campaign.json").is_file():
            print(f"keycloak_campaign.py: error: {folder} is not a campaign folder (no campaign.json)", file=sys.stderr)
            return 2
    if args.read:
        saturation, failover = Path(args.read[0]), (Path(args.read[1]) if len(args.read) > 1 else None)
    else:
        saturation = campaign("kc-saturation", SATURATION, args)
        failover = Path(args.failover) if args.failover else campaign("kc-failover", FAILOVER, args)
    print("\n".join(["", f"saturation ({saturation}):", *saturation_rows(saturation), *lab_starts(saturation)]))
    if failover is not None:
        print("\n".join(["", f"failover ({failover}):", *failover_rows(failover), *lab_starts(failover)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
