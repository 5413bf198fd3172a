"""Arrival-rate accuracy and latency under a stall: authbench's open model beside k6's constant-arrival-rate.

One target, started here on 127.0.0.1 in a process of its own: an HTTP server answering every GET after
`--delay`, except during one pause (`--stall` long, `--stall-after` seconds after the run's first
request) when every request waits for the pause to end — a GC pause, a failover. Each tool gets a fresh
server and the same plan: `--rate` GETs a second for `--duration`, at most `--users` in flight (k6:
preAllocatedVUs = maxVUs). Reported per tool: starts planned and made, dropped starts, achieved rate,
and latency percentiles as the tool reports them — k6's http_req_duration (from the send), authbench's
response time from the intended start and its service time from the send.

    .venv/bin/python bench/k6_compare.py --k6 PATH [--rate 100] [--duration 20] [--users 20]
        [--delay 5] [--stall 1] [--stall-after 8] [--queue-for 2]

k6 is not a dependency: build it with `go install go.k6.io/k6@v1.8.1` and pass its path.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"
SERVER_START_WAIT = 10.0  # seconds for the target process to print its port
K6_SCRIPT = """import http from 'k6/http';
export const options = {{
  summaryTrendStats: ['avg', 'med', 'p(90)', 'p(99)', 'max'],
  scenarios: {{ open: {{ executor: 'constant-arrival-rate', rate: {rate}, timeUnit: '1s', duration: '{duration}s',
                        preAllocatedVUs: {users}, maxVUs: {users} }} }},
}};
export default function () {{ http.get('{url}'); }}
"""


def serve(delay: float, stall: float, stall_after: float) -> None:
    """The target (run as `--serve`): prints its port, answers until killed."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    first: list[float] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as both tools use it

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            now = time.monotonic()
            with lock:
                if not first:
                    first.append(now)
            pause_begin = first[0] + stall_after
            if pause_begin <= now < pause_begin + stall:
                time.sleep(pause_begin + stall - now)
            time.sleep(delay)
            # One write: headers and body in separate segments would meet Nagle and the client's delayed ACK.
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

        def log_message(self, *_args) -> None:
            pass

    server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


def start_target(args: argparse.Namespace) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen([sys.executable, __file__, "--serve", "--delay", str(args.delay),
                                "--stall", str(args.stall), "--stall-after", str(args.stall_after)],
                               stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + SERVER_START_WAIT
    line = process.stdout.readline() if process.stdout else ""
    if not line.strip().isdigit() or time.monotonic() > deadline:
        process.kill()
        raise SystemExit("k6_compare.py: error: the target server did not start")
    return process, int(line)


def run_k6(args: argparse.Namespace, port: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        script, summary = Path(folder) / "open.js", Path(folder) / "summary.json"
        script.write_text(K6_SCRIPT.format(rate=args.rate, duration=args.duration, users=args.users,
                                           url=f"http://{LOOPBACK}:{port}/"))
        subprocess.run([args.k6, "run", "--quiet", "--no-usage-report", "--summary-export", str(summary), str(script)],
                       check=True, capture_output=True, timeout=args.duration * 3 + 60)
        metrics = json.loads(summary.read_text())["metrics"]
    duration = metrics["http_req_duration"]
    started = int(metrics["iterations"]["count"])
    return {"tool": "k6 constant-arrival-rate", "planned": round(args.rate * args.duration), "started": started,
            "dropped": int(metrics.get("dropped_iterations", {}).get("count", 0)),
            "achieved": started / args.duration, "latency": "from send",
            "p50": duration["med"], "p99": duration["p(99)"], "max": duration["max"]}


def run_authbench(args: argparse.Namespace, port: int) -> list[dict]:
    import http.client

    import locust  # noqa: F401  (gevent's monkey-patching first, as in authbench itself)

    from authbench.openmodel.driver import LevelDriver
    from authbench.openmodel.rates import Arrivals, Level
    from authbench.runner import create_environment
    from authbench.user import JourneyOutcome, JourneyUser

    class GetUser(JourneyUser):
        journey_name = "GET"
        request_type = "GET"

        def journey(self) -> JourneyOutcome:
            if getattr(self, "conn", None) is None:
                self.conn = http.client.HTTPConnection(LOOPBACK, port, timeout=30)
            try:
                self.conn.request("GET", "/")
                response = self.conn.getresponse()
                response.read()
            except OSError as exc:
                self.conn.close()
                self.conn = None
                return JourneyOutcome(False, "connection error", str(exc))
            return JourneyOutcome(response.status == 200, "" if response.status == 200 else "http status")

    environment = create_environment(GetUser, None)
    environment.create_local_runner()
    level = Level("bench", float(args.rate), float(args.duration))
    outcome = LevelDriver(environment, GetUser, level, 1, Arrivals(max_users=args.users, queue_for=args.queue_for,
                                                                   late_after=0.010)).run(args.duration * 3 + 60)
    environment.runner.quit()
    common = {"tool": "authbench --rate", "planned": outcome.planned, "started": outcome.started,
              "dropped": outcome.dropped, "achieved": outcome.achieved_rate}
    rows = []
    for name, latencies in (("from intended start", outcome.response), ("service, from send", outcome.service)):
        figures = latencies.to_dict()
        rows.append({**common, "latency": name, "p50": figures["p50"], "p99": figures["p99"], "max": figures["max"]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k6", help="path of a k6 binary (go install go.k6.io/k6@v1.8.1)")
    parser.add_argument("--rate", type=int, default=100, help="GETs per second (default 100)")
    parser.add_argument("--duration", type=int, default=20, help="seconds (default 20)")
    parser.add_argument("--users", type=int, default=20, help="in flight at most (default 20)")
    parser.add_argument("--delay", type=float, default=0.005, help="server seconds per request (default 0.005)")
    parser.add_argument("--stall", type=float, default=1.0, help="seconds of the pause (default 1)")
    parser.add_argument("--stall-after", type=float, default=8.0, help="seconds into the run (default 8)")
    parser.add_argument("--queue-for", type=float, default=2.0, help="authbench --queue-for in seconds (default 2)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.delay, args.stall, args.stall_after)
        return
    if not args.k6 or not os.access(args.k6, os.X_OK):
        parser.exit(2, "k6_compare.py: error: give --k6 PATH of a k6 binary (go install go.k6.io/k6@v1.8.1)\n")
    if min(args.rate, args.duration, args.users) < 1:
        parser.exit(2, "k6_compare.py: error: --rate, --duration and --users must be at least 1\n")
    rows = []
    for runner in (run_k6, run_authbench):
        process, port = start_target(args)
        try:
            result = runner(args, port)
        finally:
            process.kill()
            process.wait()
        rows += result if isinstance(result, list) else [result]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{args.rate}/s for {args.duration} s, at most {args.users} in flight; server {args.delay * 1000:g} ms "
          f"per request, one {args.stall:g} s pause {args.stall_after:g} s in; {when}")
    print("| tool | planned | started | dropped | achieved /s | latency | p50 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for row in rows:
        print(f"| {row['tool']} | {row['planned']} | {row['started']} | {row['dropped']} | {row['achieved']:.1f} | "
              f"{row['latency']} | {row['p50']:.1f} | {row['p99']:.1f} | {row['max']:.1f} |")


if __name__ == "__main__":
    main()
