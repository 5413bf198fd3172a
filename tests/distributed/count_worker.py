"""A worker process for the distributed tests: `python count_worker.py MASTER_PORT JOURNEY_MS [MASTER_TIMEOUT_S]`.

Its journey needs no server (a sleep, every seventh one failing), so exactness is checked with
thousands of journeys in seconds; everything else — the master, the messages, the processes — is real.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import gevent
import locust  # noqa: F401, I001  (gevent patches before anything imports ssl, as in authbench run)

from authbench.accounts import AccountPicker, from_template
from authbench.distributed import DistributedError, worker
from authbench.runner import create_environment
from authbench.user import JourneyOutcome, JourneyUser

FAIL_EVERY = 7


@dataclass
class Settings:
    """What a journey's settings hold that the worker looks at: the accounts (a worker takes its share)."""

    accounts: AccountPicker = field(default_factory=lambda: AccountPicker(from_template("u{0000..9999}", "p-{user}")))


class SleepUser(JourneyUser):
    journey_name = "sleep journey"
    journey_s = 0.001
    calls = 0

    def journey(self) -> JourneyOutcome:
        SleepUser.calls += 1
        settings = self.run_context.settings
        account = settings.accounts.pick().username if settings else "acct"
        gevent.sleep(SleepUser.journey_s)
        if SleepUser.calls % FAIL_EVERY == 0:
            return JourneyOutcome(ok=False, reason="injected", account=account)
        return JourneyOutcome(ok=True, account=account)


def main(argv: list[str]) -> int:
    port, SleepUser.journey_s = int(argv[0]), float(argv[1]) / 1000
    master_timeout = float(argv[2]) if len(argv) > 2 else worker.DEFAULT_MASTER_TIMEOUT
    environment = create_environment(SleepUser, settings=Settings())
    try:
        agent = worker.connect(environment, "127.0.0.1", port, connect_wait=10, master_timeout=master_timeout)
        return worker.serve(agent, master_timeout)
    except DistributedError as exc:
        print(f"authbench: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
