"""Generator CPU per OIDC code-flow journey: authbench's OIDC user against a plain Locust + requests script.

The provider is panva's oidc-provider (node, `make tools`), started by this script on 127.0.0.1 with the
tests' configuration (tests/oidc/provider.mjs), in a process of its own: its CPU is not the generator's.
Both clients walk the same flow per journey: the authorization request (PKCE S256, state, nonce), the login
form GET and POST, the consent form, the provider's redirects, the redirect to the redirect_uri caught, and
the code exchanged at the token endpoint (client_secret_basic); discovery once (per process for authbench,
per user for the plain script). Method as `generator_cpu.py`'s: each measurement is a fresh process running
U users × J journeys under authbench's pattern runner (the plain script's task wrapped as a journey, so both
carry the same runner and Locust statistics); its CPU time (user + system, getrusage, imports excluded)
divided by the journeys. The clients alternate for several rounds with the order rotating; medians.

- authbench: `OIDCUser` as `authbench run --target oidc+http://… --client-id rp-basic` drives it
- authbench-validate: the same with `--validate-id-token` (PyJWT: RS256 signature against the cached JWKS,
  iss, aud, exp, nonce)
- plain: bench/oidc_plain_locust.py (HttpUser, requests, BeautifulSoup), written the way a Locust user would

    .venv/bin/python bench/oidc_cpu.py [--rounds 5] [--users 4] [--journeys 250] [--port 22950]
        [--kinds authbench,authbench-validate,plain] [--profile KIND]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PROVIDER_SCRIPT = BENCH.parent / "tests" / "oidc" / "provider.mjs"
PROVIDER_VERSION = "9.13.3"  # deploy/k8s/tools.sh's OIDC_PROVIDER_VERSION, as tests/oidc/conftest.py
CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
PROVIDER_MODULE = CACHE / "npm" / f"oidc-provider-{PROVIDER_VERSION}" / "node_modules" / "oidc-provider" / "lib" / \
    "index.js"
SECRET = "bench-rp-secret-5d1e"
REDIRECT_URI = "http://127.0.0.1:9/authbench/callback"  # nothing listens there: the redirect is caught
POST_LOGOUT_REDIRECT_URI = "http://127.0.0.1:9/authbench/signed-out"  # provider.mjs registers it for every RP
CLIENT_ID = "rp-basic"
PASSWORD_PREFIX = "pw-"  # the lab's rule, pw-{user}; the provider checks it
ACCOUNTS = 200  # user000..user199
DEFAULT_ROUNDS = 5
DEFAULT_USERS = 4
DEFAULT_JOURNEYS = 250  # per user: a process's start (Locust, connections) is tens of ms of CPU to spread
DEFAULT_PORT = 22950
DEFAULT_KINDS = "authbench,authbench-validate,plain"
KINDS = ("authbench", "authbench-validate", "plain")
START_LIMIT = 30.0  # seconds for node to answer discovery
CHILD_TIME_LIMIT = 600  # seconds one measurement may take
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _child(kind: str, issuer: str, users: int, journeys: int, profile: str | None) -> None:
    import locust  # noqa: F401, I001  (gevent patches before ssl is imported)
    import resource

    from authbench.patterns import Pattern, Plan
    from authbench.runner import run_plan_locally

    outcomes: list[bool] = []
    counts = {"requests": 0, "failed": 0}
    base, settings = _plain_user(issuer) if kind == "plain" else _authbench_user(issuer, kind)

    def count(request_type: str = "", exception=None, **_kwargs) -> None:
        if request_type != base.request_type:  # not the journey's own entry
            counts["requests"] += 1
            counts["failed"] += exception is not None

    class Counted(base):
        listening = False

        def on_start(self) -> None:
            if not Counted.listening:
                Counted.listening = True
                self.environment.events.request.add_listener(count)
            super().on_start()

    user_class = Counted

    def listen(context) -> None:
        context.events.sample.add_listener(lambda sample: outcomes.append(sample.outcome == "ok"))

    profiler = None
    if profile == kind:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    run_plan_locally(Plan((Pattern(users, journeys),)), user_class, settings, cell_time_limit=CHILD_TIME_LIMIT,
                     listen=listen)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_SELF)
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(40)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(60)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    ok = sum(outcomes) if kind != "plain" else len(outcomes) - min(len(outcomes), counts["failed"])
    print(json.dumps({"kind": kind, "journeys": len(outcomes), "ok": ok, "cpu_s": cpu, "wall_s": wall,
                      "user_s": after.ru_utime - before.ru_utime, **counts}))


def _authbench_user(issuer: str, kind: str):
    from authbench.accounts import AccountPicker, from_template
    from authbench.journeys.forms import PRESETS
    from authbench.kinds.oidc.flow import BASIC, Client
    from authbench.kinds.oidc.user import OIDCSettings, OIDCUser

    accounts = AccountPicker(from_template(f"user{{000..{ACCOUNTS - 1:03d}}}", PASSWORD_PREFIX + "{user}"))
    settings = OIDCSettings(issuer, accounts, True, 10.0, PRESETS,
                            client=Client(CLIENT_ID, REDIRECT_URI, "openid", BASIC, SECRET),
                            validate_id_token=kind == "authbench-validate")
    return OIDCUser, settings


def _plain_user(issuer: str):
    """The plain script's user, its task run as one journey per iteration (its failed requests are counted)."""
    os.environ.update(OIDC_ISSUER=issuer, OIDC_CLIENT_ID=CLIENT_ID, OIDC_CLIENT_SECRET=SECRET,
                      OIDC_REDIRECT_URI=REDIRECT_URI, OIDC_ACCOUNTS=str(ACCOUNTS), OIDC_PASSWORD_PREFIX=PASSWORD_PREFIX)
    sys.path.insert(0, str(BENCH))
    from locust.clients import HttpSession
    from oidc_plain_locust import CodeFlowUser

    from authbench.user import JourneyOutcome, JourneyUser

    class PlainUser(JourneyUser):
        journey_name = "OIDC code flow (plain)"
        _fail = CodeFlowUser._fail

        def on_start(self) -> None:
            super().on_start()
            self.client = HttpSession(base_url=issuer, request_event=self.environment.events.request, user=self)
            self.client.trust_env = False  # as HttpUser.__init__ makes its client
            CodeFlowUser.on_start(self)

        def journey(self) -> JourneyOutcome:
            CodeFlowUser.code_flow(self)
            return JourneyOutcome(True)

    return PlainUser, None


def provider_cpu(pid: int) -> float:
    """The provider process's CPU seconds so far (user + system, /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class ProviderProcess:
    """oidc-provider on 127.0.0.1:port, configured as in the tests; stopped on exit."""

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.issuer = f"http://127.0.0.1:{port}"

    def __enter__(self) -> ProviderProcess:
        node = shutil.which("node")
        if node is None or not PROVIDER_MODULE.is_file():
            sys.exit(f"oidc_cpu.py: error: oidc-provider {PROVIDER_VERSION} is not in {CACHE}/npm (or node is "
                     "missing): run `make tools`")
        env = {**os.environ, "OIDC_PROVIDER_MODULE": str(PROVIDER_MODULE), "PORT": str(self.port),
               "PASSWORD_PREFIX": PASSWORD_PREFIX, "CLIENT_SECRET": SECRET, "REDIRECT_URI": REDIRECT_URI,
               "POST_LOGOUT_REDIRECT_URI": POST_LOGOUT_REDIRECT_URI}
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("w") as out:
            self.process = subprocess.Popen([node, str(PROVIDER_SCRIPT)], env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_LIMIT
        while True:
            try:
                urllib.request.urlopen(self.issuer + "/.well-known/openid-configuration", timeout=2).read()
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    sys.exit(f"oidc_cpu.py: error: oidc-provider did not start: {self.log.read_text()[-500:]}")
                time.sleep(0.1)

    def __exit__(self, *_exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _measure(kind: str, args: argparse.Namespace, provider: ProviderProcess) -> dict:
    load_before = os.getloadavg()[0]
    provider_before = provider_cpu(provider.process.pid)
    command = [sys.executable, __file__, "--child", kind, "--issuer", provider.issuer, "--users", str(args.users),
               "--journeys", str(args.journeys)] + (["--profile", args.profile] if args.profile else [])
    result = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIME_LIMIT, check=False)
    if result.returncode != 0 or not result.stdout.strip():
        sys.exit(f"oidc_cpu.py: error: the {kind} measurement failed: {result.stderr.strip()[-2000:]}")
    if args.profile == kind:
        Path(args.run_dir, f"profile-{kind}.txt").write_text(result.stderr)
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    measured["provider_cpu_s"] = provider_cpu(provider.process.pid) - provider_before
    measured["load"] = (load_before, os.getloadavg()[0])
    return measured


def _rotate(kinds: list[str], args: argparse.Namespace, provider: ProviderProcess) -> dict[str, list[dict]]:
    """Each kind once per round, the order rotating, so the machine's drift hits all alike."""
    results: dict[str, list[dict]] = {kind: [] for kind in kinds}
    for round_number in range(args.rounds):
        shift = round_number % len(kinds)
        for kind in kinds[shift:] + kinds[:shift]:
            measured = _measure(kind, args, provider)
            results[kind].append(measured)
            print(f"round {round_number + 1} {kind:<20} {measured['journeys']} journeys ({measured['ok']} ok) "
                  f"CPU {per_journey(measured):.2f} ms/journey "
                  f"(provider {per_journey(measured, 'provider_cpu_s'):.2f}), "
                  f"{measured['requests'] / measured['journeys']:.2f} requests each, "
                  f"{measured['journeys'] / measured['wall_s']:.1f} journeys/s, load {measured['load'][0]:.2f}"
                  f"→{measured['load'][1]:.2f}", flush=True)
    return results


def per_journey(measured: dict, key: str = "cpu_s") -> float:
    return measured[key] * 1000 / measured["journeys"]


def _print_table(results: dict[str, list[dict]]) -> None:
    medians = {kind: statistics.median(per_journey(m) for m in rows) for kind, rows in results.items()}
    print("\n| client | median CPU ms per journey | min | max | journeys/s | provider CPU ms per journey |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, rows in results.items():
        values = [per_journey(m) for m in rows]
        rate = statistics.median(m["journeys"] / m["wall_s"] for m in rows)
        provider = statistics.median(per_journey(m, "provider_cpu_s") for m in rows)
        print(f"| {kind} | {medians[kind]:.2f} | {min(values):.2f} | {max(values):.2f} | {rate:.1f} | {provider:.2f} |")
    for kind, value in medians.items():
        if kind != "plain" and "plain" in medians:
            print(f"{kind} / plain: {value / medians['plain']:.3f}")
    if "authbench" in medians and "authbench-validate" in medians:
        print(f"--validate-id-token adds {medians['authbench-validate'] - medians['authbench']:.2f} ms per journey")
    loads = [load for rows in results.values() for m in rows for load in m["load"]]
    print(f"load average (1 min) over the run: {min(loads):.2f}–{max(loads):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--users", type=int, default=DEFAULT_USERS)
    parser.add_argument("--journeys", type=int, default=DEFAULT_JOURNEYS)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="the provider's port on 127.0.0.1")
    parser.add_argument("--kinds", default=DEFAULT_KINDS, help=f"comma-separated, of {','.join(KINDS)}")
    parser.add_argument("--profile", help="cProfile this kind's measurements (RUN_DIR/profile-KIND.txt)")
    parser.add_argument("--run-dir", default=".authbench/bench-oidc")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--issuer", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.issuer, args.users, args.journeys, args.profile)
        return
    kinds = args.kinds.split(",")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.exit(2, f"oidc_cpu.py: error: --kinds: unknown {', '.join(sorted(unknown))}; "
                       f"choose from {','.join(KINDS)}\n")
    if min(args.rounds, args.users, args.journeys) < 1 or not 1 <= args.port <= 65535:
        parser.exit(2, "oidc_cpu.py: error: --rounds, --users and --journeys must be at least 1, --port a port\n")
    started = datetime.datetime.now(datetime.UTC)
    with ProviderProcess(args.port, Path(args.run_dir) / "provider.log") as provider:
        results = _rotate(kinds, args, provider)
    ended = datetime.datetime.now(datetime.UTC)
    print(f"\n{started:%Y-%m-%d %H:%M}–{ended:%H:%M} UTC, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, oidc-provider {PROVIDER_VERSION}, {args.users} users x {args.journeys} "
          f"journeys per measurement, {args.rounds} rounds")
    _print_table(results)


if __name__ == "__main__":
    main()
