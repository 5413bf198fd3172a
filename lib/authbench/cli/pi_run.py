"""`authbench run --target lab:privacyidea` (or https://host/validate/check): OTP checks in the same patterns.

`run.py` hands privacyIDEA targets here; patterns, warm-up, repetitions and results are the SAML run's,
only the user class differs. One process: HOTP tokens must not be checked by two clients at once.
"""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

from . import EXIT_FAILURE, CliError, fault_options, openmodel, say
from .guards import claim_lock_and_check
from .options import accounts_from_args, lab_account_defaults, running_lab, tls_verify
from .prepared import PreparedRun, load_key, one_journey_preflight

LAB_TARGET = "lab:privacyidea"
CHECK_SUFFIX = "/validate/check"
LAB_SAMPLED = ("privacyidea", "ldap")  # its server (SQLite, its database, in the same processes) and its directory


def wants(target: str) -> bool:
    return target == LAB_TARGET or urlsplit(target).path.rstrip("/").endswith(CHECK_SUFFIX)


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("privacyIDEA (targets lab:privacyidea, https://host/validate/check)")
    group.add_argument("--otp-type", choices=("hotp", "totp", "spass"), default="hotp",
                       help="which of each user's tokens to check (default hotp)")
    group.add_argument("--realm", help="privacyIDEA realm (lab default: lab)")
    group.add_argument("--tokens-file", help="JSON user → type → {serial, pin, key, digits, step} (lab: its own)")
    group.add_argument("--hotp-counters", help="SQLite file of the next HOTP counters (lab: beside its tokens)")


def _lab(lab_dir: str) -> tuple[str, dict]:
    from authbench_lab.privacyidea import server

    config = running_lab(lab_dir)
    if "privacyidea" not in config.extras:
        raise CliError("the running lab has no privacyIDEA; start it with 'authbench lab up --with privacyidea'")
    return config.privacyidea_url(), {**lab_account_defaults(config), "realm": server.REALM,
                                      "tokens": server.tokens_file(config),
                                      "counters": server.root(config) / "hotp-counters.sqlite"}


def settings_from_args(args: argparse.Namespace, timeout: float):
    from ..otp.counters import CounterStore
    from ..users.privacyidea import PrivacyIdeaSettings

    lab: dict = {}
    url = args.target
    if url == LAB_TARGET:
        url, lab = _lab(args.lab_dir)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"--target {args.target!r} is not an http(s)://host:port{CHECK_SUFFIX} URL")
    base = f"{parts.scheme}://{parts.netloc}"
    tokens_path = args.tokens_file or lab.get("tokens")
    realm = args.realm or lab.get("realm")
    if not tokens_path or not realm:
        raise CliError("a privacyIDEA target needs --tokens-file and --realm (the lab supplies both)")
    try:
        tokens = json.loads(Path(tokens_path).read_text())
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read --tokens-file {str(tokens_path)!r}: {exc}") from None
    counters_path = args.hotp_counters or lab.get("counters") or Path(tokens_path).with_suffix(".counters.sqlite")
    counters = CounterStore(counters_path) if args.otp_type == "hotp" else None
    picker, account_source = accounts_from_args(args, lab or None)
    settings = PrivacyIdeaSettings(base, realm, args.otp_type, picker, tokens, counters, timeout, tls_verify(args))
    return settings, account_source


def prepare(args: argparse.Namespace, plan, timeout: float, cell_limit: float) -> PreparedRun:
    from ..users.privacyidea import PrivacyIdeaUser, preflight

    if args.workers or args.master or args.worker:
        raise CliError("privacyIDEA targets run in one process (HOTP tokens are checked one at a time); "
                       "drop --workers/--master/--worker")
    if args.keep_failures < 0:
        raise CliError("--keep-failures must be 0 or more")
    settings, account_source = settings_from_args(args, timeout)
    config = {"target": settings.url, "journey": "privacyidea-validate", "privacyidea": settings.describe(),
              "timeout_s": timeout, "accounts": account_source, "keep_failures": args.keep_failures}
    faults, fault_lab = fault_options.apply(args, settings, config)
    on_lab = args.target == LAB_TARGET
    return PreparedRun(plan, settings, config, settings.url, cell_limit, args.keep_failures,
                       load_key(args, settings.url), PrivacyIdeaUser, one_journey_preflight(preflight, settings.url),
                       faults, lab_run_dir=args.lab_dir if on_lab else fault_lab, sampled=LAB_SAMPLED if on_lab else ())


def run(args: argparse.Namespace, plan, timeout: float, cell_limit: float) -> int:
    from .. import headless

    prepared = prepare(args, plan, timeout, cell_limit)
    settings = prepared.settings
    with ExitStack() as held:
        run_dir = claim_lock_and_check(args, prepared, held)
        say(f"target {settings.url}{CHECK_SUFFIX}: {settings.token_type} check ok; plan "
            f"{openmodel.plan_text(args, plan)}, warm-up {plan.warmup:g} s, {plan.repeat} repetition(s)")
        with prepared.cell_listeners(run_dir, say) as (listen, extras):
            report = prepared.execute(run_dir, say=say, resume=args.resume, listen=listen, cell_extras=extras)
    headless.print_report(report, say)
    return 0 if report.complete and not report.degraded else EXIT_FAILURE
