"""privacyIDEA OTP checks: one POST /validate/check per journey, PIN + HOTP, TOTP or a SPASS PIN.

Targets: `lab:privacyidea`, https://host/validate/check. One process only: an HOTP token must not be
checked by two clients at once, and its counters live in one SQLite file (`counters.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ... import embedded_lab
from ...errors import AuthbenchError
from ..base import Capabilities, CommonOptions, Journey, Kind
from ..common import accounts, load_key, tls_verify
from ..preflight import OneJourneyCheck

LAB_TARGET = "lab:privacyidea"
CHECK_SUFFIX = "/validate/check"
LAB_SAMPLED = ("privacyidea", "ldap")  # its server (SQLite, its database, in the same processes) and its directory
TOKEN_TYPES = ("hotp", "totp", "spass")


@dataclass(frozen=True)
class Options:
    otp_type: str = "hotp"
    realm: str | None = None
    tokens_file: str | None = None
    hotp_counters: str | None = None


def add_options(group: Any) -> None:
    group.add_argument("--otp-type", choices=TOKEN_TYPES, default="hotp",
                       help="which of each user's tokens to check (default hotp)")
    group.add_argument("--realm", help="privacyIDEA realm (lab default: lab)")
    group.add_argument("--tokens-file", help="JSON user → type → {serial, pin, key, digits, step} (lab: its own)")
    group.add_argument("--hotp-counters", help="SQLite file of the next HOTP counters (lab: beside its tokens)")


def claims(target: str) -> bool:
    return target == LAB_TARGET or urlsplit(target).path.rstrip("/").endswith(CHECK_SUFFIX)


def prepare(common: CommonOptions, options: Options) -> Journey:
    from .counters import CounterStore
    from .user import PrivacyIdeaSettings, PrivacyIdeaUser, preflight

    lab: dict[str, Any] = {}
    url = common.target
    on_lab = url == LAB_TARGET
    if on_lab:
        config = embedded_lab.running(common.lab_dir)
        lab = {**embedded_lab.account_defaults(config), **embedded_lab.privacyidea(config)}
        url = lab["url"]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AuthbenchError(f"--target {common.target!r} is not an http(s)://host:port{CHECK_SUFFIX} URL")
    tokens_path = options.tokens_file or lab.get("tokens")
    realm = options.realm or lab.get("realm")
    if not tokens_path or not realm:
        raise AuthbenchError("a privacyIDEA target needs --tokens-file and --realm (the lab supplies both)")
    try:
        tokens = json.loads(Path(tokens_path).read_text())
    except (OSError, ValueError) as exc:
        raise AuthbenchError(f"cannot read --tokens-file {str(tokens_path)!r}: {exc}") from None
    counters_path = options.hotp_counters or lab.get("counters") or Path(tokens_path).with_suffix(".counters.sqlite")
    counters = CounterStore(counters_path) if options.otp_type == "hotp" else None
    picker, account_source = accounts(common.accounts, lab or None)
    verify = tls_verify(common.ca_bundle, common.insecure)
    settings = PrivacyIdeaSettings(f"{parts.scheme}://{parts.netloc}", realm, options.otp_type, picker, tokens,
                                   counters, common.timeout, verify, pace=common.pace)
    record = {"target": settings.url, "journey": "privacyidea-validate", "privacyidea": settings.describe(),
              "timeout_s": common.timeout, "accounts": account_source}
    return Journey(PrivacyIdeaUser, settings, record, settings.url,
                   load_key(settings.url, common.lab_dir, on_lab),
                   lambda: OneJourneyCheck(settings.url, preflight(settings)), lab_dir=common.lab_dir if on_lab else "",
                   sampled=LAB_SAMPLED if on_lab else (),
                   summary_line=f"target {settings.url}{CHECK_SUFFIX}: {settings.token_type} check ok")


ONE_PROCESS = "HOTP tokens are checked one at a time, in one process; drop --workers/--master/--worker"
KIND = Kind("privacyidea", "privacyIDEA OTP checks", "lab:privacyidea, https://host/validate/check", claims,
            Options, prepare, Capabilities(distributed=False, why_not_distributed=ONE_PROCESS), add_options,
            variants={otp_type: {"otp_type": otp_type} for otp_type in TOKEN_TYPES})  # a check of each token type
