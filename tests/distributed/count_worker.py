"""A worker process for the distributed tests: `python count_worker.py MASTER_PORT JOURNEY_MS [MASTER_TIMEOUT_S]`.

Its journey needs no server (a sleep, every seventh one failing), so exactness is checked with
thousands of journeys in seconds; everything else — the master, the messages, the processes — is real.
"""

from __future__ import annotations

import sys

import gevent
import locust  # noqa: F401, I001  (gevent patches before anything imports ssl, as in authbench run)

from authbench.distributed import DistributedError, worker
from authbench.runner import create_environment
from authbench.user import JourneyOutcome, JourneyUser

FAIL_EVERY = 7


class SleepUser(JourneyUser):
    journey_name = "sleep journey"
    journey_s = 0.001
    calls = 0

    def journey(self) -> JourneyOutcome:
        SleepUser.calls += 1
        gevent.sleep(SleepUser.journey_s)
        if SleepUser.calls % FAIL_EVERY == 0:
            return JourneyOutcome(ok=False, reason="injected", account="acct")
        return JourneyOutcome(ok=True, account="acct")


def main(argv: list[str]) -> int:
    port, SleepUser.journey_s = int(argv[0]), float(argv[1]) / 1000
    master_timeout = float(argv[2]) if len(argv) > 2 else worker.DEFAULT_MASTER_TIMEOUT
    environment = create_environment(SleepUser, settings=None)
    try:
        agent = worker.connect(environment, "127.0.0.1", port, connect_wait=10, master_timeout=master_timeout)
        return worker.serve(agent, master_timeout)
    except DistributedError as exc:
        print(f"authbench: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
