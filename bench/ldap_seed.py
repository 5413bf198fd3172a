"""How long the lab takes to load its LDAP accounts (vendors quote import times; so do we).

Method: for each size, a fresh directory is seeded offline three times — LDIF generated with {SSHA}
password hashes, then `slapadd -q` — and the median is reported with the database size.

    .venv/bin/python bench/ldap_seed.py [--sizes 1000,10000,100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
from pathlib import Path

from authbench_lab import slapd
from authbench_lab.config import LabConfig
from authbench_lab.lab import find_binaries

DEFAULT_SIZES = "1000,10000,100000"
DEFAULT_ROUNDS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    args = parser.parse_args()
    slapadd = find_binaries()["slapadd"]
    print(f"{datetime.date.today()}, slapadd -q, tool-threads {slapd.TOOL_THREADS}\n")
    print("| users | median seconds | users/s | database MiB |")
    print("|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        seconds, database = [], 0.0
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as run_dir:
                files = slapd.prepare(LabConfig(run_dir=Path(run_dir), users=size))
                seconds.append(slapd.seed(files, slapadd, size)["seconds"])
                database = sum(p.stat().st_blocks * 512 for p in files.data.iterdir()) / 2**20
        median = statistics.median(seconds)
        print(f"| {size:,} | {median:.2f} | {size / median:,.0f} | {database:.0f} |", flush=True)


if __name__ == "__main__":
    main()
