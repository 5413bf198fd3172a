"""The journey's own Python, without network: one journey's raw responses recorded, then replayed from memory.

What it measures is everything authbench does per journey above the socket — response heads, cookies,
forms, the walk, form encoding, Locust's `request` events — and nothing of TLS, the kernel or the
gevent hub. Timings here are hot (the same journey again and again); for figures that do not drift
with the machine, count instructions with callgrind and take the difference of two journey counts:

    .venv/bin/python bench/journey_replay.py --record /tmp/journey.pickle --sp-url https://127.0.0.1:22403/secure/ \
        --ca .authbench/lab/pki/ca.crt        # against a running lab, as user000
    .venv/bin/python bench/journey_replay.py --replay /tmp/journey.pickle --journeys 2000
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python bench/journey_replay.py \
        --replay /tmp/journey.pickle --journeys 100      # then 300: (I300 - I100) / 200 per journey
"""

from __future__ import annotations

# isort: off
import locust  # noqa: F401  (first: gevent patches the standard library, as in a Locust run)
# isort: on

import argparse
import pickle
import time

from authbench.journeys import connection, transport
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import sso_login
from authbench_lab.config import password_for

ACCOUNT = "user000"  # a lab account; its password by the lab's rule
WARMUP_JOURNEYS = 20


class _Recording(transport.Stream):
    """The real stream, keeping every chunk it receives, per (host, port)."""

    received: dict[tuple[str, int], list[bytes]] = {}

    def __init__(self, host: str, port: int, *args, **kwargs) -> None:
        super().__init__(host, port, *args, **kwargs)
        self.key = (host, port)

    def recv(self) -> bytes:
        data = super().recv()
        _Recording.received.setdefault(self.key, []).append(data)
        return data


class _Replay:
    """A stream that sends nowhere and receives the recorded chunks, in order, over and over."""

    received: dict[tuple[str, int], list[bytes]] = {}
    resumed, session, context = False, None, None

    def __init__(self, host: str, port: int, *_args, **_kwargs) -> None:
        self.chunks = _Replay.received[(host, port)]
        self.position = 0

    def sendall(self, data: bytes) -> None:
        pass

    def recv(self) -> bytes:
        data = self.chunks[self.position % len(self.chunks)]
        self.position += 1
        return data

    def close(self) -> None:
        pass


def record(sp_url: str, ca: str, path: str) -> None:
    connection.Stream = _Recording  # type: ignore[misc]
    with FastBrowser(verify=ca) as browser:
        outcome = sso_login(browser, sp_url, ACCOUNT, password_for(ACCOUNT))
    if not outcome.ok:
        raise SystemExit(f"journey_replay: the journey to record failed: {outcome}")
    with open(path, "wb") as file:
        pickle.dump({"sp_url": sp_url, "received": _Recording.received}, file)
    print(f"recorded {sum(map(len, _Recording.received.values()))} responses to {path}")


def replay(path: str, journeys: int) -> None:
    from locust import User
    from locust.env import Environment

    with open(path, "rb") as file:
        recorded = pickle.load(file)
    _Replay.received = recorded["received"]
    connection.Stream = _Replay  # type: ignore[misc]
    environment = Environment(user_classes=[User])
    environment.create_local_runner()  # Locust's statistics listen to the request events, as in a run
    fire = environment.events.request.fire

    def on_request(name, method, url, status, elapsed_ms, length, exception) -> None:
        fire(request_type=method, name=name, response_time=elapsed_ms, response_length=length,
             exception=exception, context={}, url=url)

    browser = FastBrowser(verify=False, on_request=on_request)

    def journey() -> None:
        browser.clear_cookies()
        outcome = sso_login(browser, recorded["sp_url"], ACCOUNT, password_for(ACCOUNT))
        assert outcome.ok, outcome

    for _ in range(WARMUP_JOURNEYS):
        journey()
    started = time.process_time()
    for _ in range(journeys):
        journey()
    print(f"{(time.process_time() - started) * 1000 / journeys:.3f} ms CPU per journey (hot, {journeys} journeys)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", metavar="FILE", help="record one journey (needs --sp-url and --ca)")
    parser.add_argument("--replay", metavar="FILE", help="replay a recorded journey")
    parser.add_argument("--sp-url")
    parser.add_argument("--ca")
    parser.add_argument("--journeys", type=int, default=2000)
    args = parser.parse_args()
    if args.record and args.sp_url and args.ca:
        record(args.sp_url, args.ca, args.record)
    elif args.replay:
        replay(args.replay, args.journeys)
    else:
        parser.exit(2, "journey_replay.py: error: give --record FILE --sp-url URL --ca FILE, or --replay FILE\n")


if __name__ == "__main__":
    main()
