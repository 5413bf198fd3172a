"""`authbench compare`: the cluster checks and the backend × pattern × repetition matrix, in one folder.

Against the lab (`--backends`, the default: it brings the clusters up and down again) or against
clusters of the user's (`--target NAME=URL`, with `--lb NAME=URL` and `--node NAME=URL` for the
checks). Everything is saved as it goes; `--resume FOLDER` continues an interrupted campaign with the
options stored in it, and `--dry-run` prints the plan and its estimated duration without any load.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..errors import EXIT_FAILURE, AuthbenchError
from ..targets_lock import lab_key, target_lock, url_key
from . import compare_lab, fault_options, openmodel
from .compare_targets import user_targets
from .console import say
from .options import (
    DEFAULT_PASSWORD_RULE,
    account_options,
    add_account_options,
    add_lab_dir_option,
    add_success_options,
    add_tls_options,
    check_port,
    success_rule,
    tls_verify,
)

CAMPAIGN_ID_HINT = "; give another --campaign-id, --resume it, or --overwrite to move it aside"
OPEN_OPTIONS = ("rate", "duration", "levels", "arrivals", "max_users", "queue_for", "late_after", "slo", "start_rate",
                "growth", "precision", "max_rate", "step_duration", "step_warmup")  # cli/openmodel.py's
CUSTOM_RULE = "password_rule_given"  # stored instead of the rule: a rule can be a password in all but name
# The options that define a campaign: stored in campaign.json, taken from there by --resume.
STORED_OPTIONS = ("backends", "target", "lb", "node", "pattern", "warmup", "repeat", "cell_time_limit",
                  "account", "accounts_csv", "accounts_template", "order", "seed",
                  "ca_bundle", "insecure", "lab_dir", "base_port", "users", "timeout", "prometheus",
                  "prometheus_query", "expect", "expect_regex", "expect_status", "keep_failures", "fault", "pace",
                  *OPEN_OPTIONS)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from authbench_lab import config as lab_config


    parser = subparsers.add_parser("compare", help="compare clustering backends: cluster checks, then the matrix")
    where = parser.add_argument_group("what to compare")
    which = where.add_mutually_exclusive_group()
    which.add_argument("--backends",
                       help="lab clusters, comma-separated: the reference IdP's backends (default all: "
                       f"{','.join(lab_config.BACKENDS)}) and Keycloak's designs "
                       f"({','.join(lab_config.KEYCLOAK_CLUSTERS)}; brought up one after another)")
    which.add_argument("--target", action="append", metavar="NAME=URL",
                       help="a cluster of yours: its SP's protected URL (repeat for each)")
    where.add_argument("--lb", action="append", metavar="NAME=URL", help="balancer base URL of a --target")
    where.add_argument("--node", action="append", metavar="NAME=URL",
                       help="a node of a --target bypassing the balancer (repeat; two for Tests 2 and 3)")
    add_tls_options(where)
    where.add_argument("--timeout", default="10s", help="per request (default 10s)")
    where.add_argument("--prometheus", metavar="URL", help="your targets' Prometheus, asked after every cell")
    where.add_argument("--prometheus-query", action="append", metavar="NAME=PROMQL",
                       help="a query for --prometheus, e.g. idp_cpu='sum(rate(process_cpu_seconds_total[1m]))'")

    plan = parser.add_argument_group("the matrix")
    plan.add_argument("--pattern", default="2x1000,10x200,20x200", help="USERSxRUNS[,…] (default: 2012's)")
    plan.add_argument("--warmup", default="60s", help="load before every cell, excluded (default 60s)")
    plan.add_argument("--repeat", type=int, default=3, help="repetitions of each pattern (default 3)")
    plan.add_argument("--cell-time-limit", default="1h", help="a cell taking longer is cut short (default 1h)")
    fault_options.add_pace_option(plan)
    fault_options.add_options(parser)  # Test 4: returning users, the plan played in every cell of every target
    add_account_options(parser)
    add_success_options(parser.add_argument_group("what counts as logged in"))
    openmodel.add_options(parser)

    lab = parser.add_argument_group("the lab (with --backends)")
    add_lab_dir_option(lab)  # a lab running there is used
    lab.add_argument("--base-port", type=int, default=lab_config.DEFAULT_BASE_PORT)
    lab.add_argument("--users", type=int, default=lab_config.DEFAULT_USERS, help="LDAP accounts to seed")
    lab.add_argument("--keep-lab", action="store_true", help="leave a lab this command started running")

    output = parser.add_argument_group("campaign")
    output.add_argument("--results", default="results", help="results folder (default ./results)")
    output.add_argument("--campaign-id", help="name of the campaign's folder (default: date, time, suffix); "
                        "an existing one is refused unless --overwrite")
    existing = output.add_mutually_exclusive_group()
    existing.add_argument("--resume", metavar="FOLDER", help="continue this campaign; its stored options apply")
    existing.add_argument("--overwrite", action="store_true",
                          help="move an existing --campaign-id folder aside (renamed .replaced-TIME) first")
    output.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration")
    output.add_argument("--force", action="store_true",
                        help="load the targets even while another authbench process loads them")
    parser.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    from ..cluster.campaign import ESTIMATE_LAB_UP_S, plan_lines
    from ..patterns import PlanError, check_cell_limit, parse_duration, parse_plan

    campaign = None
    if args.resume:
        campaign = _resumed(args)
    try:
        plan = parse_plan(args.pattern, args.warmup, args.repeat)
        cell_limit, timeout = parse_duration(args.cell_time_limit), parse_duration(args.timeout)
        check_cell_limit(plan, cell_limit)
    except PlanError as exc:
        raise AuthbenchError(str(exc)) from None
    if timeout <= 0:
        raise AuthbenchError("--timeout must be more than 0")
    fault_options.pace(args, cell_limit)  # refused now, not after a lab came up
    check_port(args.base_port, "--base-port")
    if not campaign:
        _check_campaign_id(args)
    if openmodel.wanted(args):  # levels instead of patterns: backends compared at equal arrival rates
        plan = openmodel.level_plan(args, plan.warmup, plan.repeat)
    prometheus = _prometheus(args)
    # stages: the labs to bring up one after another (compare_lab), or the user's clusters, as one stage without lab
    stages = [compare_lab.Stage(None, user_targets(args), start=False)] if args.target else compare_lab.stages(args)
    targets = [target for stage in stages for target in stage.targets]
    if args.dry_run:
        done = {t.name: campaign.done_cells(t.name) for t in targets} if campaign else {}
        checks = set(campaign.document["checks"]) if campaign else set()
        ups = [(f"bring up the lab with {stage.describe()}",
                compare_lab.ESTIMATE_KEYCLOAK_UP_S if stage.design else ESTIMATE_LAB_UP_S)
               for stage in stages if stage.start]
        lines, _ = plan_lines(targets, plan, done, lab_ups=ups, checks_done=checks)
        for line in lines:
            say(line)
        return 0
    return _execute(args, campaign, targets, plan, stages, timeout, cell_limit, prometheus)


def _resumed(args: argparse.Namespace):
    """The campaign to continue, locked, its stored options put into `args`; AuthbenchError when it cannot be."""
    from ..cluster.campaign import Campaign
    from ..results.lock import FolderBusy

    try:
        campaign = Campaign.load(Path(args.resume))
        options = campaign.document["config"]["options"]
        if not isinstance(options, dict):
            raise TypeError("its stored options are not a mapping")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise AuthbenchError(f"--resume: {args.resume}/campaign.json is not a campaign's ({detail})") from None
    for name, value in options.items():
        if name in STORED_OPTIONS:
            setattr(args, name, value)
    if options.get(CUSTOM_RULE) and args.password_rule == DEFAULT_PASSWORD_RULE:
        raise AuthbenchError("this campaign's accounts used a --password-rule of yours, which is not stored: "
                       "give it again with --resume")
    try:
        campaign.lock()
    except FolderBusy as exc:
        raise AuthbenchError(f"--resume: {exc}") from None
    return campaign


def _check_campaign_id(args: argparse.Namespace) -> None:
    from ..results.folder import NEW, OVERWRITE, check_name

    if args.campaign_id is None:
        return
    try:
        check_name(Path(args.results), args.campaign_id, what="--campaign-id",
                   existing=OVERWRITE if args.overwrite else NEW, hint=CAMPAIGN_ID_HINT)
    except ValueError as exc:
        raise AuthbenchError(str(exc)) from None


def _prometheus(args: argparse.Namespace):
    from ..cluster.prometheus import PrometheusError, parse_queries

    if not args.prometheus:
        if args.prometheus_query:
            raise AuthbenchError("--prometheus-query needs --prometheus URL")
        return None
    try:
        queries = parse_queries(args.prometheus, args.prometheus_query or [])
        if not args.dry_run:
            queries.check()
    except (ValueError, PrometheusError) as exc:
        raise AuthbenchError(str(exc)) from None
    return queries


def _create(args: argparse.Namespace, targets: list, plan: Any, lab_config: Any):
    from ..cluster.campaign import Campaign
    from ..results.provenance import machine, versions

    config = {
        "backends": [t.name for t in targets], "patterns": [p.label for p in plan.patterns],
        "warmup_s": plan.warmup, "repeat": plan.repeat, "cell_time_limit": args.cell_time_limit,
        "targets": {t.name: t.describe() for t in targets},
        "lab": None if lab_config is None else {"run_dir": str(lab_config.run_dir), "base_port": lab_config.base_port,
                                                "stickiness": lab_config.stickiness, "users": lab_config.users},
        "options": {**{name: getattr(args, name) for name in STORED_OPTIONS},
                    CUSTOM_RULE: args.password_rule != DEFAULT_PASSWORD_RULE},  # that a rule was given, not the rule
    }
    try:
        return Campaign.create(Path(args.results), args.campaign_id, config, versions(), machine(),
                               overwrite=args.overwrite)
    except (OSError, ValueError) as exc:
        raise AuthbenchError(f"cannot write the campaign under {args.results!r}: {exc}") from None


def _execute(args, campaign, targets, plan, stages, timeout, cell_limit, prometheus) -> int:
    """The campaign, holding the lock of every target it loads (targets_lock) from the lab's start to its end, stage
    after stage (compare_lab): its lab up, its targets' preflights, its cells. A stage failing after the campaign
    exists is recorded against its targets and the next stage runs; before, the command fails."""
    from ..signals import Interrupted, note

    lab = stages[0].config
    keys = [lab_key(lab.run_dir)] if lab is not None else sorted({url_key(t.url) for t in targets})
    ok, up, starts = True, None, []
    with ExitStack() as locks:
        for key in keys:
            locks.enter_context(target_lock(key, f"authbench compare (results {args.results})", force=args.force))
        try:
            for stage in stages:
                if campaign is not None and _stage_done(campaign, stage, plan):
                    say(f"{stage.describe()}: done, its lab is not brought up")
                    continue
                try:
                    if stage.start:  # the lab before goes down first: one Keycloak design at a time
                        if up is not None:
                            compare_lab.take_down(up, say)
                        up = stage  # from here on taken down however its start ends
                        starts.append(compare_lab.bring_up(stage, say))
                    verify = tls_verify(args, str(stage.config.ca_cert) if stage.config else None)
                    items = [_target_run(args, target, plan, stage.config, verify, timeout, cell_limit, prometheus)
                             for target in stage.targets]
                except AuthbenchError as exc:
                    if campaign is None:
                        raise
                    for target in stage.targets:
                        campaign.record_error(target.name, str(exc))
                    say(f"{stage.describe()}: skipped: {exc}")
                    ok = False
                    continue
                if campaign is None:  # only once every target of the first stage answered
                    campaign = _create(args, targets, plan, stage.config)
                    say(f"campaign {campaign.folder}: {len(targets)} target(s), plan {plan.describe()}, warm-up "
                        f"{plan.warmup:g} s before each cell, {plan.repeat} repetition(s)")
                for record in starts:  # each lab's start, Keycloak's timed apart
                    campaign.record_lab_start(record)
                starts = []
                ok &= _run_all(campaign, items, plan, targets)
        except Interrupted as exc:
            if campaign is not None:
                campaign.sync_cells([t.name for t in targets])
                note(exc, f"campaign {campaign.folder} kept; continue it with --resume {campaign.folder}")
            raise
        finally:
            if up is not None and not args.keep_lab:
                compare_lab.take_down(up, say)
                note(sys.exc_info()[1], "the lab this command started is down")
        campaign.finish()
        _print_comparison(campaign, [t.name for t in targets])
        written = _write_report(campaign)
        campaign.release()
    return 0 if written and ok else EXIT_FAILURE


def _stage_done(campaign, stage, plan) -> bool:
    """Every target of the stage has its checks and all its cells (a resumed campaign): no need of its lab."""
    cells = {(pattern.label, repetition) for pattern, repetition in plan.cells()}
    return all(t.name in campaign.document["checks"] and cells <= campaign.done_cells(t.name) for t in stage.targets)


def _write_report(campaign) -> bool:
    from ..report import ReportError, write_report

    try:
        html, markdown = write_report(campaign.folder)
    except ReportError as exc:
        say(f"report not written: {exc}")
        return False
    say(f"report: {html} and {markdown}")
    return True


def _run_all(campaign, items: list, plan, targets: list) -> bool:
    from ..cluster.campaign import execute_target

    names = [t.name for t in targets]
    ok = True
    for item in items:
        try:
            ok &= execute_target(campaign, item, plan, names, say)
        except AuthbenchError as exc:  # the target broke down before its cells: the others still run
            campaign.record_error(item.target.name, str(exc))
            say(f"{item.target.name}: skipped: {exc}")
            ok = False
    return ok


def _target_run(args, target, plan, lab_config, verify, timeout, cell_limit, prometheus):
    """The SAML journey of one target through the run path, after its preflight login (AuthbenchError when it
    fails): `run(runs folder, listen)` measures its cells with the servers' CPU sampled."""
    from .. import embedded_lab, kinds
    from .. import run as run_path
    from ..cluster.campaign import TargetRun
    from ..cluster.checks import Account
    from ..cluster.resources import (
        GENERATOR,
        RESOURCES_FILE,
        ResourceSampler,
        lab_components,
        lab_pids,
        lab_repoint,
    )
    from ..kinds.base import CommonOptions
    from ..prepared import RESUME, RunSettings, prepare

    success_rule(args)  # refused now, in one line
    lab_dir = str(lab_config.run_dir) if lab_config is not None else args.lab_dir
    common = CommonOptions(
        target=embedded_lab.PREFIX + target.name if lab_config is not None else target.url,
        accounts=account_options(args), ca_bundle=args.ca_bundle, insecure=args.insecure, timeout=timeout,
        lab_dir=lab_dir, pace=fault_options.pace(args, cell_limit))
    options = kinds.saml.Options(reuse_session=bool(args.fault), expect=args.expect, expect_regex=args.expect_regex,
                                 expect_status=args.expect_status)
    settings = RunSettings(existing=RESUME, cell_time_limit=cell_limit, keep_failures=args.keep_failures)
    prepared = prepare(kinds.saml.KIND, common, options, plan, settings, args.fault, name=target.name)
    check = prepared.journey.preflight()  # before any load: one whole login; every hop shown only when it failed
    for line in check.lines() if not check.ok else [f"preflight: one login as {check.account}: logged in"]:
        say(f"{target.name}: {line}")
    problem = check.problem()
    if problem:
        raise AuthbenchError(f"{target.name}: {problem}")
    first = prepared.journey.settings.accounts.pick()

    def run(runs_dir: Path, listen) -> bool:
        components, not_generator = {GENERATOR: os.getpid()}, frozenset()
        if lab_config is not None:
            state = embedded_lab.state(lab_config.run_dir) or {}
            components, not_generator = lab_components(state, target.name), lab_pids(state)
        check.save(runs_dir / target.name)
        repoint = lab_repoint(lab_config.run_dir, target.name) if lab_config is not None else None
        sampler = ResourceSampler(components, runs_dir / target.name / RESOURCES_FILE, prometheus=prometheus,
                                  not_generator=not_generator, repoint=repoint).start()

        def subscribe(context) -> None:
            sampler.listen(context)
            listen(context)

        try:
            report = run_path.measure(prepared, runs_dir / target.name, say, listen=subscribe,
                                      cell_extras=lambda: {"resources": sampler.cell_summary()})
        finally:
            sampler.stop()
        return report.complete

    return TargetRun(target, Account(first.username, first.password), verify, run)


def _print_comparison(campaign, names: list[str]) -> None:
    from ..cluster.checks import CheckResult, format_table
    from ..cluster.faults.table import format_test4
    from ..results import verdicts
    from ..results.summary import Summary
    from ..results.table import format_comparison, run_label

    by_target = {name: [(run_label(c["pattern"], c["repetition"]), Summary.from_dict(c["summary"]))
                        for c in cells] for name in names if (cells := campaign.run_cells(name))}
    checks = {name: [CheckResult(r["test"], r["passed"], r["evidence"]) for r in rows]
              for name, rows in campaign.document["checks"].items()}
    if checks:
        say("\n" + format_table(checks))
    test4 = format_test4({name: campaign.run_cells(name) for name in names})
    if test4:
        say("\n" + test4)
    if by_target:
        say("\n" + format_comparison(by_target))
    say(f"\ncampaign: {campaign.folder}")
    for name in names:  # a backend with something judged (Test 4, an SLO): its panel, as `run` ends with it
        panel = campaign.run_document(name).get("verdicts") or {}
        if panel.get("passed") is not None:
            say(f"\n{name}: " + "\n".join(verdicts.lines(panel)))
