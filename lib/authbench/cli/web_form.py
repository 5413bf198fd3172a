"""The web UI's start form read as `authbench run` options: one parser and one `prepare` for both.

The web package knows nothing of the CLI; `authbench web` hands it `form_preparer(run_options)`, so a
target, pattern or warm-up means the same in the browser as on the command line.
"""

from __future__ import annotations

import argparse
import os
import shlex
import tempfile
from collections.abc import Callable
from typing import Any

from ..errors import AuthbenchError
from ..patterns import PlanError, parse_duration
from ..web.launch import DEFAULT_CELL_TIME_LIMIT
from .web_policy import WebPolicy

# Optional fields of the form, each one `authbench run` option. The password rule and an uploaded CSV are
# secrets: they go to the parser in this process only (no command line anyone could read) and the CSV
# into a private file that is gone once the accounts are read. No field is a path (cli/web_policy.py).
OPTION_FIELDS = {"expect": "--expect", "expect_regex": "--expect-regex", "expect_status": "--expect-status",
                 "accounts_template": "--accounts-template", "password_rule": "--password-rule",
                 "ca_bundle": "--ca-bundle", "fault": "--fault", "pace": "--pace",
                 # an OIDC target's RP
                 "client_id": "--client-id", "grant": "--grant", "scope": "--scope", "redirect_uri": "--redirect-uri"}
FILE_FIELDS = {"ca_bundle": "CA bundle"}  # fields naming a file: by its name in `authbench web --files-dir`
SECRET_FIELD = "client_secret"  # an OIDC RP's secret, typed in: into the run's options in memory, never a file
FLAG_FIELDS = {"reuse_session": "--reuse-session"}  # checkboxes: present (any value but "") means on
CSV_FIELD = "accounts_csv_text"  # the text of an uploaded user,password file
OPEN_FIELDS = ("rate", "duration", "levels", "slo")  # arrival rates instead of patterns (cli/openmodel.py)
# the open model's knobs: the capacity search's, and the journeys in flight at most (`--max-users`)
SEARCH_FIELDS = ("start_rate", "max_rate", "growth", "precision", "step_duration", "step_warmup", "max_users")
CAPACITY_FIELD = "capacity"  # a checkbox: run the capacity search (`authbench capacity`, or `--levels …,max`)
ALLOW_COMMANDS_OPTION = "--allow-fault-commands"  # `authbench web`: the form may give run=COMMAND faults
PLAN_FIELDS = ("target", "pattern", "warmup", "repeat", "cell_time_limit")
# Every field the start form has: any other is refused, never ignored (an old page's, a script's typo)
FORM_FIELDS = frozenset((*PLAN_FIELDS, *OPTION_FIELDS, *FLAG_FIELDS, CSV_FIELD, *OPEN_FIELDS, *SEARCH_FIELDS,
                         CAPACITY_FIELD, SECRET_FIELD))


class _Parser(argparse.ArgumentParser):
    """`authbench run`'s parser, raising instead of exiting: a bad field is a message, not an exit."""

    def error(self, message: str):  # type: ignore[override]
        raise AuthbenchError(message)


def _run_parser() -> argparse.ArgumentParser:
    from . import run

    top = _Parser(prog="authbench", add_help=False)
    run.add_parser(top.add_subparsers(parser_class=_Parser))
    return top


def parse_form(form: dict[str, str], run_options: str = "", accounts_csv: str | None = None) -> argparse.Namespace:
    """The start form (target, patterns, warm-up, repetitions, time limit, OPTION_FIELDS) + `authbench web
    --run-options`; `accounts_csv` is the file an uploaded CSV was written to."""
    if unknown := sorted(set(form) - FORM_FIELDS):
        raise AuthbenchError(f"the start form has no field {unknown[0]!r}; send only its fields (a file is named by "
                             "CA bundle, a secret typed into Client secret)")
    target = (form.get("target") or "").strip()
    if not target:
        raise AuthbenchError("give a target: lab:BACKEND or the SP's protected URL (or an LDAP, database, "
                             "privacyIDEA or oidc+https://ISSUER target)")
    repeat = (form.get("repeat") or "1").strip()
    if not repeat.isdigit():
        raise AuthbenchError(f"repetitions {repeat!r} is not a whole number")
    limit = (form.get("cell_time_limit") or DEFAULT_CELL_TIME_LIMIT).strip()
    try:
        if parse_duration(limit) <= 0:
            raise AuthbenchError("the time limit per pattern repetition must be more than 0")
    except PlanError as exc:
        raise AuthbenchError(str(exc)) from None
    try:
        extra = shlex.split(run_options)
    except ValueError as exc:
        raise AuthbenchError(f"--run-options {run_options!r}: {exc}") from None
    # Each field is one argument after its option: a value cannot smuggle in options of its own.
    open_model = [f"--{field}={value}" for field in OPEN_FIELDS if (value := (form.get(field) or "").strip())]
    capacity = bool((form.get(CAPACITY_FIELD) or "").strip())
    search = [f"--{field.replace('_', '-')}={value}" for field in SEARCH_FIELDS
              if (value := (form.get(field) or "").strip())]
    pattern = [] if open_model or capacity else ["--pattern", (form.get("pattern") or "").strip() or ","]
    argv = ["run", "--target", target, *pattern, *open_model, *search,
            "--warmup", (form.get("warmup") or "0").strip(), "--repeat", repeat, "--cell-time-limit", limit]
    for field, option in OPTION_FIELDS.items():
        value = (form.get(field) or "").strip()
        if value:
            argv.append(f"{option}={value}")  # one argument, even when the text starts with '-'
    argv += [flag for field, flag in FLAG_FIELDS.items() if (form.get(field) or "").strip()]
    if accounts_csv:
        argv.append(f"--accounts-csv={accounts_csv}")
    args = _run_parser().parse_args([*argv, *extra])
    args.capacity = args.capacity or capacity
    return args


def form_plan(form: dict[str, str], run_options: str = "") -> Any:
    """The plan alone of a form (patterns, or arrival rates and the capacity search), checked as `authbench run`
    checks it, for the page's estimate; AuthbenchError."""
    from ..patterns import parse_plan
    from . import openmodel

    args = parse_form({**form, "target": form.get("target") or "lab:x"}, run_options)
    plan = parse_plan(args.pattern, args.warmup, args.repeat)  # a PlanError is an AuthbenchError
    return openmodel.level_plan(args, plan.warmup, plan.repeat) if openmodel.wanted(args) else plan


def _give_secret(args: argparse.Namespace, secret: str) -> None:
    """The typed secret into the run's OIDC options (oidc.Options.client_secret); refused for another journey."""
    from .. import kinds

    kind = kinds.kind_for(args.target, args.kind, args.locustfile)
    if SECRET_FIELD not in kind.option_names():
        raise AuthbenchError(f"Client secret is for an OpenID Connect target; {kind.label} take none: leave it empty")
    args.client_secret = secret


def refuse_fault_commands(args: argparse.Namespace, where: str) -> None:
    """A run=COMMAND fault runs any program as the UI's user: refused unless `authbench web --allow-fault-commands`
    (lab stop/start items stay allowed)."""
    from ..cluster.faults.plan import RUN, parse_faults

    command = next((fault for fault in parse_faults(args.fault) if fault.action == RUN), None)
    if command is not None:
        raise AuthbenchError(f"{where}: '{command.describe()}': run=COMMAND faults are refused by the web UI (they "
                             f"run any program as its user) unless it was started with {ALLOW_COMMANDS_OPTION}; "
                             "lab stop/start items are allowed")


def form_preparer(run_options: str = "", allow_fault_commands: bool = False,
                  policy: WebPolicy | None = None) -> Callable[[dict[str, str]], Any]:
    """form → a checked run (AuthbenchError on bad input), whatever the target's journey (SAML SSO, LDAP, database,
    privacyIDEA); `run_options` are checked now, not at the first start. run=COMMAND faults only with
    `allow_fault_commands`; files and targets only as `policy` allows."""
    from .run import prepare

    policy = policy or WebPolicy()
    checked = parse_form({"target": "lab:x", "pattern": "1x1"}, run_options)
    if not allow_fault_commands:
        refuse_fault_commands(checked, "--run-options")

    def parsed(form: dict[str, str], accounts_csv: str | None = None) -> argparse.Namespace:
        files = {field: policy.file(label, value) for field, label in FILE_FIELDS.items()
                 if (value := (form.get(field) or "").strip())}
        args = parse_form({**form, **files}, run_options, accounts_csv)
        policy.check_target(args.target)
        if not allow_fault_commands:
            refuse_fault_commands(args, "fault plan")
        if secret := (form.get(SECRET_FIELD) or "").strip():
            _give_secret(args, secret)
        return args

    def prepare_form(form: dict[str, str]) -> Any:
        text = form.get(CSV_FIELD) or ""
        if not text.strip():
            return prepare(parsed(form))
        with tempfile.TemporaryDirectory(prefix="authbench-accounts-") as private:  # mode 0700
            path = os.path.join(private, "accounts.csv")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as file:
                file.write(text)
            prepared = prepare(parsed(form, accounts_csv=path))  # read here, then deleted
        prepared.journey.record["accounts"]["file"] = "uploaded in the web UI"
        return prepared

    return prepare_form
