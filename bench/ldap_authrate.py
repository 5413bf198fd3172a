"""Bind rate and generator CPU per bind: `authbench authrate` beside OpenDJ's authrate and 389-ds's ldclt.

All three bind the same 900 accounts (uid=bench.100 … bench.999, one shared password, added to the
lab's slapd by this script) on the same server, one tool at a time, in alternating rounds. Kept-open
connections (authrate -f) compare authbench with authrate; a new connection per bind compares all
three (ldclt -e bindeach,bindonly has no kept-open re-bind). CPU is the tool's user+system time from
getrusage(RUSAGE_CHILDREN) around each run, minus the same tool's start-up (a one-bind run). The
random password is on the tools' command lines (ldclt and the 5.0.3 authrate read it nowhere else).

    .venv/bin/authbench lab up --backend local --base-port 5000 --run-dir /tmp/ldap-lab
    .venv/bin/python bench/ldap_authrate.py --run-dir /tmp/ldap-lab [--rounds 3] [--connections 10,50]
        [--modes kept,new] [--workers 2]

Fetches the OpenDJ toolkit (Maven Central) into ~/.cache/authbench; ldclt comes from Debian's
389-ds-base (`apt-get install -y 389-ds-base`). Nothing third-party goes into the repository.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import ldap

from authbench_lab import lab, slapd
from authbench_lab.config import LDAP_ADMIN_DN, LDAP_PEOPLE, LabConfig

TOOLKIT_URL = ("https://repo1.maven.org/maven2/org/openidentityplatform/opendj/opendj-ldap-toolkit/5.0.3/"
               "opendj-ldap-toolkit-5.0.3.zip")
CACHE = Path.home() / ".cache" / "authbench"
LOW, HIGH = 100, 999  # bench.100 … bench.999: three digits, as ldclt's XXX fills them
DURATION_S = 10  # ldclt measures in 10-second samples
BIND_DN = "uid=bench.{}," + LDAP_PEOPLE
RUN_LIMIT_S = 120


def toolkit() -> Path:
    home = CACHE / "opendj-ldap-toolkit"
    if not (home / "bin" / "authrate").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        archive = CACHE / TOOLKIT_URL.rsplit("/", 1)[1]
        if not archive.exists():
            urllib.request.urlretrieve(TOOLKIT_URL, archive)
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(CACHE)
        for tool in (home / "bin").iterdir():
            tool.chmod(0o755)
    return home / "bin" / "authrate"


def seed_accounts(config: LabConfig, password: str) -> None:
    """The bench accounts, added (or their password reset) through the admin account."""
    conn = ldap.initialize(config.ldap_url())
    conn.simple_bind_s(LDAP_ADMIN_DN, slapd.paths(config).admin_password.read_text().strip())
    hashed = slapd.ssha(password).encode()
    for n in range(LOW, HIGH + 1):
        dn = BIND_DN.format(n)
        try:
            conn.add_s(dn, [("objectClass", [b"inetOrgPerson"]), ("uid", [f"bench.{n}".encode()]),
                            ("cn", [b"bench"]), ("sn", [str(n).encode()]), ("userPassword", [hashed])])
        except ldap.ALREADY_EXISTS:
            conn.modify_s(dn, [(ldap.MOD_REPLACE, "userPassword", [hashed])])
    conn.unbind_s()


def timed(command: list[str]) -> tuple[str, float]:
    """Output and CPU seconds (user + system, descendants included) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, capture_output=True, text=True, timeout=RUN_LIMIT_S, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result.stdout + result.stderr, cpu


def authbench(port: int, password: str, connections: int, keep_open: bool, one: bool = False,
              workers: int = 1) -> list[str]:
    return [sys.executable, "-m", "authbench", "authrate", *(["--workers", str(workers)] if workers > 1 else []),
            "-h", "127.0.0.1", "-p", str(port), "-D",
            BIND_DN.format("{}"), "-w", password, "-g", f"rand({LOW},{HIGH})", "-c", str(connections),
            *(["-f"] if keep_open else []), *(["-m", "1"] if one else ["-d", str(DURATION_S)]),
            "-i", str(DURATION_S)]


def opendj(tool: Path, port: int, password: str, connections: int, keep_open: bool, one: bool = False) -> list[str]:
    # The 5.0.3 toolkit still takes Java format strings (%d) where the 7.x documentation writes {}
    return [str(tool), "-h", "127.0.0.1", "-p", str(port), "-D", BIND_DN.format("%d"), "-w", password,
            "-g", f"rand({LOW},{HIGH})", "-c", str(connections), *(["-f"] if keep_open else []),
            *(["-m", "1"] if one else ["-d", str(DURATION_S)]), "-i", str(DURATION_S), "-S"]


def ldclt(port: int, password: str, connections: int) -> list[str]:
    return ["ldclt", "-h", "127.0.0.1", "-p", str(port), "-D", BIND_DN.format("XXX"), "-w", password,
            "-e", f"bindeach,bindonly,randombinddn,randombinddnlow={LOW},randombinddnhigh={HIGH}",
            "-n", str(connections), "-N", "1", "-q"]


def binds(tool: str, output: str) -> int:
    if tool == "authbench":
        match = re.search(r"^(\d+) authentications in [\d.]+ s after the warm-up: [\d.]+/s, (\d+) errors", output, re.M)
        assert match and match.group(2) == "0", output[-800:]
        return int(match.group(1))
    if tool == "authrate":
        rows = [line.split(",") for line in output.splitlines() if re.match(r"^[\d.]+,", line)]
        assert rows and all(float(r[-1]) == 0 for r in rows), output[-800:]
        return round(float(rows[-1][2]) * float(rows[-1][0]))  # average throughput × elapsed seconds
    match = re.search(r"Global average rate:.*total:\s+(\d+)", output)
    assert match and "Exit status 0" in output and "no error occurs" in output, output[-800:]
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="/tmp/ldap-lab", help="the running lab (authbench lab up)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", default="10,50")
    parser.add_argument("--modes", default="kept,new", help="kept (authrate -f), new (a connection per bind)")
    parser.add_argument("--workers", type=int, default=1, help="authbench authrate --workers")
    args = parser.parse_args()
    state = lab.read_state(args.run_dir)
    if not state:
        raise SystemExit(f"no lab in {args.run_dir}: start one with 'authbench lab up --base-port 5000 …'")
    if not shutil.which("ldclt"):
        raise SystemExit("ldclt is missing: apt-get install -y 389-ds-base")
    config = LabConfig.from_dict(state["config"])
    port, tool, password = config.shared_port("ldap"), toolkit(), secrets.token_hex(12)
    seed_accounts(config, password)
    startup = {"authbench": statistics.median(timed(authbench(port, password, args.workers, True, one=True,
                                                              workers=args.workers))[1]
                                              for _ in range(3)),
               "authrate": statistics.median(timed(opendj(tool, port, password, 1, True, one=True))[1]
                                             for _ in range(3)),
               "ldclt": 0.0}
    results: dict[tuple[str, int, bool], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for connections in (int(c) for c in args.connections.split(",")):
            for keep_open in [mode == "kept" for mode in args.modes.split(",")]:
                commands = {"authbench": authbench(port, password, connections, keep_open, workers=args.workers),
                            "authrate": opendj(tool, port, password, connections, keep_open)}
                if not keep_open:
                    commands["ldclt"] = ldclt(port, password, connections)
                for name, command in commands.items():
                    output, cpu = timed(command)
                    count = binds(name, output)
                    rate = count / DURATION_S
                    per_bind_us = max(0.0, cpu - startup[name]) / count * 1e6
                    results.setdefault((name, connections, keep_open), []).append((rate, per_bind_us))
                    print(f"{name:9} c={connections:<3} {'kept open' if keep_open else 'new conn.'}: "
                          f"{rate:8.0f} binds/s, {per_bind_us:6.1f} µs CPU/bind", flush=True)
    print(f"\n{datetime.date.today()}, {args.rounds} rounds of {DURATION_S} s, authbench --workers {args.workers}, "
          "start-up CPU subtracted "
          f"(authbench {startup['authbench']:.2f} s, authrate {startup['authrate']:.2f} s); "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| connections | mode | tool | binds/s (median) | CPU µs/bind (median) | binds/s vs authrate "
          "| CPU vs authrate |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for (name, connections, keep_open), values in sorted(results.items(), key=lambda kv: (kv[0][1], not kv[0][2])):
        rate = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        ref = results[("authrate", connections, keep_open)]
        ref_rate, ref_cpu = statistics.median(v[0] for v in ref), statistics.median(v[1] for v in ref)
        print(f"| {connections} | {'kept open (-f)' if keep_open else 'new connection'} | {name} | {rate:.0f} | "
              f"{cpu:.1f} | {rate / ref_rate:.2f}× | {cpu / ref_cpu:.2f}× |")


if __name__ == "__main__":
    main()
