"""Your own journeys: `authbench run -f my_journeys.py [--user-class Name] --target …`.

The file is a locustfile whose user class extends `authbench.JourneyUser` and returns a `JourneyOutcome`
from `journey()`. It gets everything the built-in kinds get (exact patterns, rates, workers, results,
failure evidence, the report, /metrics) and reads `self.settings`, a `journeys.settings.WebSettings`
filled from --target (an URL, or lab:BACKEND for the lab SP's protected page), the accounts, TLS and the
login options. docs/custom-journeys.md walks through an example.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ... import embedded_lab
from ...errors import AuthbenchError
from ..base import Capabilities, CommonOptions, Journey, Kind
from ..common import LoginOptions, accounts, check_url, load_key, success_rule, tls_verify


@dataclass(frozen=True)
class Options(LoginOptions):
    locustfile: str | None = None
    user_class: str | None = None


def add_options(group: Any) -> None:
    group.add_argument("-f", "--locustfile", metavar="FILE",
                       help="a Python file with your journey: a class extending authbench.JourneyUser")
    group.add_argument("--user-class", metavar="NAME", help="which class of --locustfile (when it has several)")


def claims(target: str) -> bool:
    return False  # chosen by -f, never by the target


def prepare(common: CommonOptions, options: Options) -> Journey:
    from ...journeys.settings import WebSettings, login_fields
    from ..preflight import try_one_journey
    from .loader import load_user_class

    if not options.locustfile:
        raise AuthbenchError("--kind custom needs -f FILE: the Python file with your journey's class")
    user_class = load_user_class(options.locustfile, options.user_class)
    target, lab_ca, lab_defaults, backend = common.target, None, None, None
    if target.startswith(embedded_lab.PREFIX):
        backend = target[len(embedded_lab.PREFIX):]
        config = embedded_lab.running(common.lab_dir)
        embedded_lab.check_backend(config, backend)
        target, lab_ca = config.sp_url(backend) + embedded_lab.PROTECTED_PATH, str(config.ca_cert)
        lab_defaults = embedded_lab.account_defaults(config)
    if urlsplit(target).scheme in ("http", "https"):
        check_url(target, "--target")
    verify = tls_verify(common.ca_bundle, common.insecure, lab_ca)
    rule = success_rule(options.expect, options.expect_regex, options.expect_status)
    picker, account_source = accounts(common.accounts, lab_defaults)
    settings = WebSettings(target, picker, verify, common.timeout,
                           login_fields(options.login_form, options.username_field, options.password_field),
                           options.reuse_session, options.new_connection, rule, common.pace)
    record = {"target": target, "journey": f"custom: {user_class.__name__}", "locustfile": options.locustfile,
              "user_class": user_class.__name__, "timeout_s": common.timeout, "accounts": account_source,
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "login_form": settings.describe_fields(), "reuse_session": options.reuse_session,
              "new_connection": options.new_connection, "success_rule": rule.describe()}
    on_lab = backend is not None
    return Journey(user_class, settings, record, target, load_key(target, common.lab_dir, on_lab),
                   lambda: try_one_journey(user_class, settings, target), lab_dir=common.lab_dir if on_lab else "",
                   backend=backend, summary_line=f"target {target}: one {user_class.__name__} journey ok")


KIND = Kind("custom", "your own journeys", "-f FILE; --target as your class reads it, lab:BACKEND for a lab SP",
            claims, Options, prepare, Capabilities(returning_users=True), add_options)
