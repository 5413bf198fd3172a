"""Issue 28 part 4: Keycloak's CPU per OpenID Connect login and per client-credentials token, and logins/s, beside
the sizing guide's one vCPU per 15 password-based logins per second.

Method: one lab with `keycloak-owners2` (two Keycloak nodes behind HAProxy). Its realm `authbench` federates users
from slapd (Keycloak checks each password with an LDAP bind); its realm `authbench-local-users` holds users in
Keycloak's database, their passwords hashed by Keycloak's default algorithm: the guide's case. Long first runs
(WARM_UP journeys per user of the code flow in each realm and of the client-credentials grant, not counted) warm the
JVMs and let every account log in. Then ROUNDS rounds; in each, every journey runs
once (the order rotating round by round) as a closed model, USERS users back to back for JOURNEYS journeys each: the
code flow with the token request, the same ending with the code (`--no-token-exchange`), the client-credentials
grant, and the code flow of the local users. Around each run the script reads the CPU time of each Keycloak node's
process tree (kc.sh and its JVM) and of slapd, HAProxy and PostgreSQL from /proc (psutil); the difference over the
run's journeys is each one's CPU per journey, and a vCPU holds 1000 / (node A's + node B's) journeys per second.
With --capacity, `authbench capacity` finds each journey's maximum rate under SLO (an open model). The generator
shares the two cores: the machine's load average is printed at each run.

    .venv/bin/python bench/keycloak_oidc.py [--base-port 12000] [--rounds 3] [--capacity]
    .venv/bin/python bench/keycloak_oidc.py --read FOLDER          # the tables of a folder already measured
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

DESIGN = "keycloak-owners2"
TARGET = f"oidc+lab:{DESIGN}"
USERS, JOURNEYS = 4, 250
# Keycloak's JIT: CPU per login fell from 81 to 36 ms over the first 3,000 logins of a fresh lab (and a capacity
# search on a JVM that had served 2,000 failed at 20/s, while one that had served 5,000 passed 40/s): warm long
WARM_UP = 1000  # journeys per user, per warmed journey
ACCOUNTS = 50  # every one of them logs in during the warm-up, so Keycloak has imported them all from LDAP
CODE_FLOW, NO_EXCHANGE = "code flow with the token request", "code flow, ends with the code"
CLIENT_CREDENTIALS, LOCAL_USERS = "client credentials", "code flow, users in Keycloak (hashed passwords)"
NAMES = (CODE_FLOW, NO_EXCHANGE, CLIENT_CREDENTIALS, LOCAL_USERS)
CAPACITY = ["--slo", "p99<1000ms,errors<1%", "--start-rate", "10/s", "--step-duration", "15s", "--step-warmup", "3s",
            "--precision", "10%"]
COMPONENTS = ("keycloak-a", "keycloak-b", "ldap", "lb", "postgres")  # lab status names
CPU_FILE = "bench-cpu.json"  # beside each run's summary.json: CPU seconds per component over the run


def authbench(*args: str) -> int:
    return subprocess.run([sys.executable, "-m", "authbench", *args], check=False).returncode


def journeys(lab_dir: str) -> dict[str, list[str]]:
    """Each journey's target and options; the local users' realm has the same confidential RP and secret."""
    from authbench import embedded_lab
    from authbench_lab.keycloak import realm

    provider = embedded_lab.oidc_provider(embedded_lab.running(lab_dir), DESIGN)
    local_issuer = f"{provider['issuer'].rsplit('/realms/', 1)[0]}/realms/{realm.LOCAL_USERS_REALM}"
    ldap = ["--target", TARGET, "--lab-dir", lab_dir, "--accounts-template", f"user{{000..{ACCOUNTS - 1:03d}}}"]
    return {
        CODE_FLOW: ldap,
        NO_EXCHANGE: [*ldap, "--no-token-exchange"],
        CLIENT_CREDENTIALS: ["--target", TARGET, "--lab-dir", lab_dir, "--grant", "client-credentials"],
        LOCAL_USERS: ["--kind", "oidc", "--target", local_issuer, "--ca-bundle", provider["ca"], "--client-id",
                      realm.OIDC_CLIENT_ID, "--client-secret-file", str(provider["clients"][realm.OIDC_CLIENT_ID]),
                      "--accounts-template", f"user{{000..{realm.LOCAL_USERS - 1:03d}}}"],
    }


def cpu_seconds(lab_dir: str) -> dict[str, float]:
    """User + system CPU seconds of each component's process tree so far."""
    from authbench_lab import lab as lab_api

    seconds = {}
    for row in lab_api.status(lab_dir):
        if row["name"] in COMPONENTS and row["pid"]:
            try:
                root = psutil.Process(row["pid"])
                tree = [root, *root.children(recursive=True)]
                seconds[row["name"]] = sum(t.user + t.system for t in (p.cpu_times() for p in tree))
            except psutil.NoSuchProcess:
                pass
    return seconds


def measured_run(lab_dir: str, folder: Path, run_id: str, options: list[str], pattern: str) -> None:
    before, load = cpu_seconds(lab_dir), os.getloadavg()[0]
    authbench("run", *options, "--results", str(folder), "--pattern", pattern, "--warmup", "0", "--run-id", run_id)
    after = cpu_seconds(lab_dir)
    # a process that exits during the run (a PostgreSQL backend) takes its CPU time along: never below 0
    spent = {name: round(max(0.0, after[name] - before[name]), 3) for name in before if name in after}
    if (folder / run_id).is_dir():
        (folder / run_id / CPU_FILE).write_text(json.dumps({"cpu_s": spent, "load_average": load}, indent=2))
    print(f"{run_id}: load average {load:.1f} at the start", flush=True)


def measure(args: argparse.Namespace, folder: Path) -> None:
    lab = ["--lab-dir", args.lab_dir]
    began = time.time()
    if authbench("lab", "up", *lab, "--base-port", str(args.base_port), "--backend", "stateless", "--users",
                 str(ACCOUNTS), "--with", "keycloak", "--keycloak-design", DESIGN.removeprefix("keycloak-")):
        sys.exit("keycloak_oidc.py: lab up failed")
    print(f"lab up: {time.time() - began:.0f} s", flush=True)
    try:
        options = journeys(args.lab_dir)
        for name in (CODE_FLOW, LOCAL_USERS, CLIENT_CREDENTIALS):  # warm JVMs; every account logged in (imported)
            measured_run(args.lab_dir, folder, f"warm-up-{slug(name)}", options[name], f"{USERS}x{WARM_UP}")
        for n in range(args.rounds):
            for name in NAMES[n % len(NAMES):] + NAMES[:n % len(NAMES)]:
                measured_run(args.lab_dir, folder, f"{slug(name)}-r{n + 1}", options[name],
                             f"{USERS}x{args.journeys}")
        if args.capacity:
            for name in NAMES:
                authbench("capacity", *options[name], "--results", str(folder), *CAPACITY,
                          "--run-id", f"{slug(name)}-capacity")
    finally:
        authbench("lab", "down", *lab)


def slug(name: str) -> str:
    return "-".join(word.strip(",()") for word in name.split() if word not in ("the", "with", "in"))


def read(folder: Path, run_id: str, file: str) -> dict | None:
    path = folder / run_id / file
    return json.loads(path.read_text()) if path.is_file() else None


def closed_rows(folder: Path) -> list[str]:
    rows = ["| journey | runs | journeys/s (each run) | median / p99 ms | Keycloak CPU ms per journey, a+b (each "
            "run) | ≈ journeys/s per vCPU (median) | slapd, HAProxy, PostgreSQL ms | errors | load average |",
            "|---|---:|---|---|---|---:|---|---:|---|"]
    for name in NAMES:
        runs = [(summary["cells"][0], cpu) for path in sorted(folder.glob(f"{slug(name)}-r*"))
                if (summary := read(folder, path.name, "summary.json")) and summary.get("cells")
                and (cpu := read(folder, path.name, CPU_FILE))]
        if not runs:
            continue
        per = [{part: seconds * 1000 / cell["summary"]["tests"] for part, seconds in cpu["cpu_s"].items()}
               for cell, cpu in runs]
        keycloak = [each.get("keycloak-a", 0) + each.get("keycloak-b", 0) for each in per]
        others = ", ".join(spread([each.get(part) for each in per]) for part in ("ldap", "lb", "postgres"))
        rates = ", ".join(f"{cell['summary']['tps']:.1f}" for cell, _cpu in runs)
        cells = [cell for cell, _cpu in runs]
        rows.append(
            f"| {name} | {len(runs)} | {rates} | {spread([c['summary'].get('median_ms') for c in cells], 0)} / "
            f"{spread([c['summary'].get('p99_ms') for c in cells], 0)} | {', '.join(f'{v:.1f}' for v in keycloak)} | "
            f"{1000 / statistics.median(keycloak):.0f} | {others} | {sum(c['summary']['errors'] for c in cells)} | "
            f"{spread([cpu['load_average'] for _cell, cpu in runs])} |")
    return rows


def spread(values: list[float | None], digits: int = 1) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "-"
    low, high = f"{min(known):.{digits}f}", f"{max(known):.{digits}f}"
    return low if low == high else f"{low}–{high}"


def capacity_rows(folder: Path) -> list[str]:
    rows = ["| journey | steps (rate/s: pass ✓ or fail ✗) | maximum capacity |", "|---|---|---:|"]
    for name in NAMES:
        document = read(folder, f"{slug(name)}-capacity", "summary.json")
        if not document or not document.get("capacity"):
            continue
        found = document["capacity"]
        steps = ", ".join(f"{s['rate']:g} {'✓' if s['passed'] else '✗'}" for s in found.get("steps") or [])
        answer = f"{found['answer']:g}/s" if found.get("answer") is not None else "not confirmed"
        rows.append(f"| {name} | {steps} | {answer} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-port", type=int, default=12000)
    parser.add_argument("--lab-dir", default=".authbench/bench-keycloak-oidc")
    parser.add_argument("--results", default="results")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--journeys", type=int, default=JOURNEYS, help="journeys per user in each run")
    parser.add_argument("--capacity", action="store_true", help="also search each journey's maximum capacity")
    parser.add_argument("--read", metavar="FOLDER", help="only print the tables of this folder")
    args = parser.parse_args()
    if args.read:
        folder = Path(args.read)
        if not folder.is_dir():
            print(f"keycloak_oidc.py: error: {folder} is not a folder of this benchmark's runs", file=sys.stderr)
            return 2
    else:
        folder = Path(args.results) / f"kc-oidc-{time.strftime('%Y%m%d-%H%M%S')}"
        measure(args, folder)
    print("\n".join(["", f"closed model ({folder}):", *closed_rows(folder), "", "capacity:", *capacity_rows(folder)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
