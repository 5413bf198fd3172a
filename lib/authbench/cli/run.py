"""`authbench run` (and `capacity`): options parsed once into a typed run, handed to the run path.

Options are grouped by the kinds that read them (`kinds.OPTION_GROUPS`); an option of another kind than
the target's is refused, not ignored. Everything after parsing happens in `authbench.run`.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import kinds
from ..errors import AuthbenchError
from ..kinds.base import CommonOptions
from ..kinds.common import DEFAULT_TIMEOUT, add_account_options, add_tls_options
from ..results.failures import DEFAULT_KEEP
from . import fault_options, mix_options, openmodel
from .console import say
from .options import account_options, add_lab_dir_option, check_ports, durations

DEFAULT_MASTER_PORT = 5557  # Locust's
DEFAULT_PATTERN = "2x1000,10x200,20x200"  # the 2012 report's


def add_parser(subparsers: argparse._SubParsersAction, name: str = "run",
               help: str = "headless load: any journey kind in threads x runs patterns or arrival rates"
               ) -> argparse.ArgumentParser:
    run = subparsers.add_parser(name, help=help)
    target = run.add_argument_group("target (every kind)")
    target.add_argument("--target", required=True,
                        help="what to load; its form picks the journey kind: an SP's protected URL or lab:BACKEND "
                        "(SAML SSO), ldap(s)://host:port or lab:ldap (LDAP binds), postgresql://host:port/db or "
                        "lab:postgres (database logins), lab:privacyidea or https://host/validate/check (OTP)")
    target.add_argument("--kind", choices=kinds.names(), help="the journey kind, when the target's form does not say")
    add_tls_options(target)
    add_lab_dir_option(target)
    target.add_argument("--timeout", default=DEFAULT_TIMEOUT, help=f"per request (default {DEFAULT_TIMEOUT})")
    accounts = add_account_options(run)

    kind_groups = []
    for option_group in kinds.OPTION_GROUPS:
        group = run.add_argument_group(option_group.label)
        option_group.add(group)
        users = list({kind.name: kind for action in group._group_actions
                      for kind in kinds.users_of(action.dest)}.values())
        group.title = f"{option_group.label} — " + (f"targets {users[0].targets}" if len(users) == 1
                                                    else "for " + ", ".join(kind.label for kind in users))
        kind_groups.append(group)

    plan = run.add_argument_group("pattern (every kind)")
    plan.add_argument("--pattern", default=DEFAULT_PATTERN,
                      help=f"USERSxRUNS[,…]: exactly USERS concurrent users doing RUNS journeys each "
                      f"(default: the 2012 report's {DEFAULT_PATTERN})")
    plan.add_argument("--warmup", default="0", help="load before each measured pattern, excluded (e.g. 60s)")
    plan.add_argument("--repeat", type=int, default=1, help="repetitions of each pattern, then averaged")
    plan.add_argument("--cell-time-limit", default="1h",
                      help="a pattern repetition taking longer is cut short and marked so (default 1h)")
    journey = run.add_argument_group("journeys (every kind)")
    fault_options.add_pace_option(journey)
    mix_options.add_options(journey)
    journey.add_argument("--keep-failures", type=int, default=DEFAULT_KEEP, metavar="N",
                         help=f"failing journeys kept per reason under results/<id>/failures/ (default {DEFAULT_KEEP})")
    openmodel.add_options(run)
    fault_options.add_options(run)

    output = run.add_argument_group("results")
    output.add_argument("--results", default="results", help="results folder (default ./results)")
    output.add_argument("--run-id", help="name of this run's folder (default: date, time and a random suffix); "
                        "an existing one is refused unless --resume or --overwrite")
    existing = output.add_mutually_exclusive_group()
    existing.add_argument("--resume", action="store_true",
                          help="continue the run folder --run-id: same target and plan, only its missing cells run")
    existing.add_argument("--overwrite", action="store_true",
                          help="move an existing --run-id folder aside (renamed .replaced-TIME) and start afresh")
    output.add_argument("--force", action="store_true",
                        help="load the target even while another authbench process loads it")
    output.add_argument("--metrics-port", type=int, help="serve Prometheus /metrics on this port during the run")
    output.add_argument("--metrics-host", default="127.0.0.1", help="address for /metrics (default 127.0.0.1)")
    output.add_argument("--max-error-pct", type=float, metavar="PCT",
                        help="exit 3 when more than PCT%% of the measured journeys failed: a pass/fail verdict "
                        "for CI and Kubernetes Jobs (default: errors do not change the exit status)")

    dist = run.add_argument_group("distributed: a Locust master and workers (every kind but privacyIDEA)")
    role = dist.add_mutually_exclusive_group()
    role.add_argument("--workers", type=int, help="run the load in N worker processes on this machine")
    role.add_argument("--master", action="store_true", help="wait for --expect-workers workers from other machines")
    role.add_argument("--worker", action="store_true", help="be a worker of the master at --master-host")
    dist.add_argument("--expect-workers", type=int, default=1, help="--master: workers to wait for (default 1)")
    dist.add_argument("--worker-wait", default="60s", help="how long the master waits for its workers (default 60s)")
    dist.add_argument("--master-bind-host", default="*", help="--master: interface to listen on (default all)")
    dist.add_argument("--master-bind-port", type=int, help="master: port to listen on (default 5557; --workers: any)")
    dist.add_argument("--master-host", default="127.0.0.1", help="--worker: the master's address")
    dist.add_argument("--master-port", type=int, default=DEFAULT_MASTER_PORT, help="--worker: the master's port")
    dist.add_argument("--connect-timeout", default="30s", help="--worker: give up reaching the master after this")
    dist.add_argument("--master-timeout", default="10s",
                      help="--worker: quit when the master has sent no heartbeat for this long (default 10s)")
    journey_actions = [action for group in (target, accounts, *kind_groups) for action in group._group_actions]
    journey_actions += [action for action in journey._group_actions]
    run.set_defaults(handler=_run, journey_actions=journey_actions,
                     account_dests={action.dest for action in accounts._group_actions},
                     kind_defaults={action.dest: action.default for group in kind_groups
                                    for action in group._group_actions})
    return run


def add_capacity_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = add_parser(subparsers, "capacity",
                            "maximum capacity: the highest arrival rate that holds an SLO (geometric, then binary)")
    parser.set_defaults(capacity=True)


def _run(args: argparse.Namespace) -> int:
    from .. import run

    return run.execute(prepare(args), say)


def prepare(args: argparse.Namespace) -> Any:
    """The typed run `args` ask for (the CLI's, or the web form's parsed by the same parser); AuthbenchError."""
    from ..patterns import check_cell_limit, parse_duration, parse_plan
    from ..prepared import NEW, OVERWRITE, RESUME, RunSettings
    from ..prepared import prepare as prepare_run

    plan = parse_plan(args.pattern, args.warmup, args.repeat)
    cell_limit = parse_duration(args.cell_time_limit)
    check_cell_limit(plan, cell_limit)
    check_ports(args, "metrics_port", "master_bind_port", "master_port")
    open_model = openmodel.wanted(args)
    if open_model:
        plan = openmodel.level_plan(args, plan.warmup, plan.repeat)

    def journey(given: argparse.Namespace) -> tuple[Any, CommonOptions, Any]:
        return _journey(given, cell_limit)

    mix = mix_options.entries(args, journey)
    kind, common, options = (mix[0].kind, mix[0].common, mix[0].options) if mix else journey(args)
    settings = RunSettings(
        results=args.results, run_id=args.run_id, existing=RESUME if args.resume else OVERWRITE if args.overwrite
        else NEW, force=args.force, cell_time_limit=cell_limit, keep_failures=args.keep_failures,
        max_error_pct=args.max_error_pct, metrics_port=args.metrics_port, metrics_host=args.metrics_host,
        role=_role(args))
    return prepare_run(kind, common, options, plan, settings, args.fault, open_model, mix=mix)


def _journey(args: argparse.Namespace, cell_limit: float) -> tuple[Any, CommonOptions, Any]:
    """The kind `args` name and its options (of the run, or of a --mix journey's [journey.NAME] table)."""
    from ..patterns import parse_duration

    kind = kinds.kind_for(args.target, args.kind, args.locustfile)
    given = {dest: value for dest, default in args.kind_defaults.items()
             if (value := getattr(args, dest)) != default}
    foreign = kinds.foreign_options(kind, given)
    if foreign:
        option = "--" + foreign[0].replace("_", "-")
        readers = ", ".join(k.title for k in kinds.users_of(foreign[0]))
        raise kind.refuse(f"take {option}", f"it is for {readers}; drop it, or give --kind")
    timeout = parse_duration(args.timeout)
    if timeout <= 0:
        raise AuthbenchError("--timeout must be more than 0")
    common = CommonOptions(
        target=args.target, timeout=timeout, ca_bundle=args.ca_bundle, insecure=args.insecure, lab_dir=args.lab_dir,
        pace=fault_options.pace(args, cell_limit), accounts=account_options(args))
    return kind, common, kinds.options_of(kind, vars(args))


def _role(args: argparse.Namespace) -> Any:
    from ..prepared import Local, Master, Worker, Workers

    worker_wait, connect_wait, master_timeout = durations(args, "worker_wait", "connect_timeout", "master_timeout")
    if args.worker:
        return Worker(args.master_host, args.master_port, connect_wait, master_timeout)
    if args.master:
        return Master(args.expect_workers, args.master_bind_host, args.master_bind_port or DEFAULT_MASTER_PORT,
                      worker_wait)
    if args.workers is not None:
        return Workers(args.workers, tuple(_journey_argv(args)), master_timeout, worker_wait, args.master_bind_port)
    return Local()


def _journey_argv(args: argparse.Namespace) -> list[str]:
    """The journey options as given, for worker processes (a password never: it stays in the environment)."""
    argv: list[str] = []
    for action in args.journey_actions:
        value = getattr(args, action.dest)
        if value is None or value == action.default or action.dest == "journey_tables":
            continue
        if isinstance(action, argparse._StoreTrueAction):
            argv.append(action.option_strings[-1])
        else:
            argv += [action.option_strings[-1], str(value)]
    return argv + mix_options.worker_argv(args)
