"""`authbench privacyidea-bench`: privacyIDEA's user-cache benchmark (its blog's method) on the running lab.

For the scenarios cache off and cache on, in that order: privacyIDEA's user cache is set (both of its caches:
the database table and the LDAP resolver's), emptied, and privacyIDEA restarted; then one client checks
user000..N-1 and the same users again (SPASS tokens: nothing differs but the user lookup) with
`authbench run`, so each scenario is an ordinary run folder with its samples and report. The medians per pass
and the plot (otp/cache_bench.py) go beside them; the lab's own cache setting is put back at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
from pathlib import Path

from ..errors import AuthbenchError
from .console import say
from .options import add_lab_dir_option, running_lab

DEFAULT_CACHE_SECONDS = 600
DEFAULT_RUN_ID = "privacyidea-cache"
MAX_USERS = 1000  # the template user{000..999}, as the blog's user000..999


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("privacyidea-bench",
                                   help="privacyIDEA's user cache off/cold/warm, its blog's method, on the lab")
    parser.add_argument("--users", type=int, help="check user000..N-1 twice (default: every lab user, "
                        f"at most {MAX_USERS}: the blog's 2000 checks)")
    parser.add_argument("--cache-seconds", type=int, default=DEFAULT_CACHE_SECONDS,
                        help=f"the user cache's lifetime when on (default {DEFAULT_CACHE_SECONDS})")
    parser.add_argument("--results", default="results", help="folder for the results (default ./results)")
    parser.add_argument("--run-id", default=DEFAULT_RUN_ID, help=f"its subfolder (default {DEFAULT_RUN_ID})")
    add_lab_dir_option(parser)
    parser.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    from authbench_lab import lab as lab_api
    from authbench_lab.privacyidea import server

    from ..kinds.privacyidea import cache_bench
    from ..names import UnsafeName, safe_name

    if args.users is not None and args.users < 1:  # before the lab: 0 is no number of users, not "all"
        raise AuthbenchError(f"--users {args.users}: give 1 or more (or leave it out for every lab user)")
    config = running_lab(args.lab_dir)
    if "privacyidea" not in config.extras:
        raise AuthbenchError("the running lab has no privacyIDEA; start it with 'authbench lab up --with privacyidea'")
    users = min(config.users, MAX_USERS) if args.users is None else args.users
    if not 1 <= users <= min(config.users, MAX_USERS):
        raise AuthbenchError(f"--users {users}: give 1..{min(config.users, MAX_USERS)} "
                             f"(the lab has {config.users} users)")
    if args.cache_seconds < 1:
        raise AuthbenchError("--cache-seconds must be at least 1 (the cache-off scenario is always run)")
    try:
        safe_name(args.run_id, "--run-id")
    except UnsafeName as exc:
        raise AuthbenchError(str(exc)) from None
    out = Path(args.results) / args.run_id
    if out.exists():
        raise AuthbenchError(f"{out} exists; give another --run-id")
    out.mkdir(parents=True)
    series: dict[str, list[float]] = {}
    try:
        for scenario, seconds in ((cache_bench.OFF, 0), (cache_bench.ON, args.cache_seconds)):
            _set_cache(lab_api, server, dataclasses.replace(config, privacyidea_cache=seconds))
            say(f"{scenario}: {2 * users} sequential checks, user000..{users - 1:03d} twice")
            series[scenario] = _checks(args, out, scenario.replace(" ", "-"), users)
    finally:
        _set_cache(lab_api, server, config)  # the lab as it was
    rows = cache_bench.passes(series, users)
    lines = cache_bench.table(rows)
    (out / "table.md").write_text("\n".join(lines) + "\n")
    (out / "bench.json").write_text(json.dumps({"users": users, "cache_seconds": args.cache_seconds,
                                                "passes": [dataclasses.asdict(row) for row in rows]}, indent=1))
    cache_bench.plot(series, users, out / "by-request.png")
    for line in lines:
        say(line)
    say(f"results: {out} (table.md, bench.json, by-request.png, a run folder per scenario)")
    return 0


def _set_cache(lab_api, server, config) -> None:
    """privacyIDEA's user cache as `config` says, both caches empty: its table cleared, the server restarted."""
    server.enrol(config)
    with sqlite3.connect(server.root(config) / "privacyidea.sqlite") as db:
        db.execute("DELETE FROM usercache")
    lab_api.stop_component(config.run_dir, server.COMPONENT)
    lab_api.start_component(config.run_dir, server.COMPONENT)


def _checks(args: argparse.Namespace, out: Path, run_id: str, users: int) -> list[float]:
    """One scenario's 2N checks through the run path: their response times in the order they were sent."""
    from .. import kinds
    from .. import run as run_path
    from ..kinds.base import AccountOptions, CommonOptions
    from ..kinds.privacyidea.cache_bench import durations
    from ..patterns import parse_plan
    from ..prepared import RunSettings, prepare

    common = CommonOptions("lab:privacyidea", AccountOptions(accounts_template=f"user{{000..{users - 1:03d}}}"),
                           lab_dir=args.lab_dir)
    prepared = prepare(kinds.privacyidea.KIND, common, kinds.privacyidea.Options(otp_type="spass"),
                       parse_plan(f"1x{2 * users}"), RunSettings(results=str(out), run_id=run_id))
    code = run_path.execute(prepared, say)
    if code != 0:
        raise AuthbenchError(f"the {run_id} run failed (exit {code}); see {out / run_id}", code)
    times, errors = durations(out / run_id)
    if errors:
        say(f"{run_id}: {errors} of {len(times)} checks failed (reasons in {out / run_id / 'summary.json'})")
    return times
