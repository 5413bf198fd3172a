"""The privacyIDEA Locust user: one POST /validate/check per iteration, user + realm + PIN and OTP.

The pass is computed here from the token secrets the lab keeps (or a --tokens-file of the same shape):
PIN + HOTP with a counter no journey ever used before (otp.counters), PIN + the current TOTP value, or a
SPASS token's PIN alone. Success is `result.value` true; a refusal's reason is privacyIDEA's own message
(`wrong otp pin`, `wrong otp value`) and an error's its code (`user not found (904)`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import urllib3

from ...accounts import AccountPicker
from ...results.failures import Evidence
from ...user import JourneyOutcome, JourneyUser
from .codes import hotp, totp
from .counters import CounterStore

CHECK_PATH = "/validate/check"
CONNECT_ERROR = "connect error"
TIMEOUT = "timeout"
NO_TOKEN = "no token for account"  # the tokens file lacks the account or the type
ERROR_NAMES = {904: "user not found", 905: "parameter error", 907: "resolver error"}
TOTP_STEP = 30  # the lab's tokens' time step
BUSY_PICKS = 100  # accounts tried before waiting for a free one (HOTP: one journey per token at a time)
PREFLIGHT_FATAL = (CONNECT_ERROR, TIMEOUT, NO_TOKEN, "wrong otp pin", "user not found (904)")


@dataclass
class PrivacyIdeaSettings:
    url: str  # http(s)://host:port, no path
    realm: str
    token_type: str
    accounts: AccountPicker  # whose passwords are unused: tokens come from `tokens`
    tokens: dict[str, dict[str, dict[str, Any]]] = field(repr=False)  # user → type → secrets
    counters: CounterStore | None = None  # required for hotp
    timeout: float = 10.0
    verify: bool | str = True
    pace: float = 0.0  # --pace: seconds from one journey's start to the user's next (0: back to back)

    def describe(self) -> dict:
        """For the run's record: no secrets."""
        return {"url": self.url + CHECK_PATH, "realm": self.realm, "token_type": self.token_type,
                "tokens": len(self.tokens), "hotp_counters": str(self.counters.path) if self.counters else None}


def otp_pass(settings: PrivacyIdeaSettings, user: str) -> str | None:
    """PIN + OTP (or the SPASS PIN) for `user`, taking a fresh HOTP counter; None without such a token."""
    token = settings.tokens.get(user, {}).get(settings.token_type)
    if token is None:
        return None
    if settings.token_type == "hotp":
        assert settings.counters is not None
        return token["pin"] + hotp(token["key"], settings.counters.take(token["serial"]), token["digits"])
    if settings.token_type == "totp":
        return token["pin"] + totp(token["key"], token["step"], token["digits"])
    return token["pin"]


def interpret(status: int, body: bytes) -> tuple[bool, str, str]:
    """(ok, reason, detail) of a /validate/check answer."""
    try:
        answer = json.loads(body)
        result = answer["result"]
    except (ValueError, KeyError, TypeError):
        return False, f"HTTP {status}", body[:200].decode(errors="replace")
    if not result.get("status", False):
        error = result.get("error") or {}
        code = error.get("code")
        name = ERROR_NAMES.get(code, "error")
        return False, f"{name} ({code})", str(error.get("message", ""))
    if result.get("value") is True:
        return True, "", ""
    message = str((answer.get("detail") or {}).get("message", "rejected"))
    return False, message, f"authentication {result.get('authentication', '')}".strip()


def check(pool: urllib3.PoolManager, settings: PrivacyIdeaSettings, user: str) -> tuple[bool, str, str]:
    password = otp_pass(settings, user)
    if password is None:
        return False, NO_TOKEN, f"no {settings.token_type} token for {user}"
    try:
        response = pool.request("POST", settings.url + CHECK_PATH,
                                fields={"user": user, "realm": settings.realm, "pass": password},
                                encode_multipart=False, timeout=settings.timeout, retries=False)
    except urllib3.exceptions.TimeoutError as exc:
        return False, TIMEOUT, str(exc)
    except urllib3.exceptions.HTTPError as exc:
        return False, CONNECT_ERROR, str(exc).split(": ", 1)[-1]
    return interpret(response.status, response.data)


def new_pool(settings: PrivacyIdeaSettings) -> urllib3.PoolManager:
    if isinstance(settings.verify, str):
        return urllib3.PoolManager(maxsize=1, ca_certs=settings.verify)
    return urllib3.PoolManager(maxsize=1, cert_reqs="CERT_REQUIRED" if settings.verify else "CERT_NONE")


def preflight(settings: PrivacyIdeaSettings) -> str | None:
    """One check before any load: why the run cannot start, or None."""
    user = settings.accounts.pick().username
    if settings.token_type == "totp":  # the load must not use this window's value again
        PrivacyIdeaUser.totp_windows[user] = int(time.time() // TOTP_STEP)
    ok, reason, detail = check(new_pool(settings), settings, user)
    if not ok and reason in PREFLIGHT_FATAL:
        return f"{settings.url}{CHECK_PATH}: {reason} for {user!r} ({detail})"
    return None


class PrivacyIdeaUser(JourneyUser):
    journey_name = "validate/check"
    request_type = "OTP"
    # Accounts with a journey in flight in this process: an HOTP token checked twice at once could be
    # refused for arriving out of order.
    busy: set[str] = set()
    # privacyIDEA takes a TOTP value once: the time window each account's TOTP was last checked in.
    totp_windows: dict[str, int] = {}

    def on_start(self) -> None:
        super().on_start()
        self.pool = new_pool(self.run_context.settings)

    def on_stop(self) -> None:
        self.pool.clear()

    def _pick_free(self, settings: PrivacyIdeaSettings) -> str:
        window = int(time.time() // TOTP_STEP) if settings.token_type == "totp" else None
        for _ in range(BUSY_PICKS):
            user = settings.accounts.pick().username
            if user not in self.busy and (window is None or self.totp_windows.get(user) != window):
                self.busy.add(user)
                if window is not None:
                    self.totp_windows[user] = window
                return user
        raise RuntimeError(f"no free account: {len(self.busy)} in flight, the others' TOTP used in this window")

    def journey(self) -> JourneyOutcome:
        settings: PrivacyIdeaSettings = self.run_context.settings
        user = self._pick_free(settings)
        try:
            ok, reason, detail = check(self.pool, settings, user)
        finally:
            self.busy.discard(user)
        if ok:
            return JourneyOutcome(True, account=user)
        evidence = None
        if self.run_context.failures.wants(reason):
            evidence = Evidence(reason, detail, user, trail=[
                f"POST {settings.url}{CHECK_PATH} user={user} realm={settings.realm} pass=({settings.token_type}, "
                "not kept)", f"answer: {reason}: {detail}"])
        return JourneyOutcome(False, reason, detail, user, step="validate/check", evidence=evidence)
