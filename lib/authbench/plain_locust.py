"""A journey kind under plain `locust -f …`: the same options as `authbench run`, on Locust's command line.

A locustfile calls `under_plain_locust("ldap")`: the kind's options and the common ones (accounts, TLS,
--timeout, --lab-dir) join Locust's parser (and its web UI's form), and at start the kind prepares its
journey from them with Locust's --host as the target. authbench's own runner attaches its context
first and keeps it, so the same locustfile also runs under `authbench run -f`.
"""

from __future__ import annotations

from typing import Any

from locust import events

from .errors import AuthbenchError
from .user import RunContext

ENV_PREFIX = "AUTHBENCH_"  # AUTHBENCH_EXPECT=… is --expect …, as under `authbench run`


def under_plain_locust(kind_name: str) -> None:
    """Wire the kind named `kind_name` (kinds.KINDS) into plain Locust's command line and start."""
    from . import kinds
    from .kinds.common import DEFAULT_TIMEOUT, add_account_options, add_tls_options

    kind = kinds.by_name(kind_name)

    @events.init_command_line_parser.add_listener
    def _options(parser: Any) -> None:
        group = _Only(parser.add_argument_group(f"authbench: {kind.title}"))
        add_tls_options(group)
        group.add_argument("--timeout", default=DEFAULT_TIMEOUT, help=f"per request (default {DEFAULT_TIMEOUT})")
        group.add_argument("--lab-dir", default=".authbench/lab", help="the lab's folder, for a lab:NAME --host")
        add_account_options(_Only(parser))
        own = set(kind.option_names())
        for option_group in kinds.OPTION_GROUPS:
            option_group.add(_Only(parser.add_argument_group(f"authbench: {option_group.label}"), own))

    @events.init.add_listener
    def _context(environment: Any, **_kwargs: Any) -> None:
        if getattr(environment, "authbench", None) is None:
            journey = _journey(kind, environment.parsed_options, environment.host)
            environment.authbench = RunContext(settings=journey.settings)
            if journey.user_class not in environment.user_classes:  # an option chose another of the kind's
                environment.user_classes = [journey.user_class]  # journeys (OIDC's --grant)


def _journey(kind: Any, options: Any, host: str | None) -> Any:
    from . import kinds
    from .kinds.base import AccountOptions, CommonOptions
    from .patterns import parse_duration

    if not host:
        raise SystemExit(f"authbench: give the target as Locust's --host ({kind.title})")
    try:
        common = CommonOptions(
            target=host, timeout=parse_duration(options.timeout), ca_bundle=options.ca_bundle,
            insecure=options.insecure, lab_dir=options.lab_dir,
            accounts=AccountOptions(options.account, options.password_file, options.accounts_csv,
                                    options.accounts_template, options.password_rule, options.order, options.seed))
        return kind.prepare(common, kinds.options_of(kind, vars(options)))
    except AuthbenchError as exc:
        raise SystemExit(f"authbench: {exc}") from None


class _Only:
    """Locust's parser (configargparse) as authbench's option groups see it: each option also read from
    AUTHBENCH_<NAME>, as under `authbench run`; with `dests`, only the options one kind reads."""

    def __init__(self, group: Any, dests: set[str] | None = None) -> None:
        self.group, self.dests = group, dests

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        dest = kwargs.get("dest") or next(n for n in names if n.startswith("--"))[2:].replace("-", "_")
        if self.dests is None or dest in self.dests:
            self.group.add_argument(*names, env_var=ENV_PREFIX + dest.upper(), **kwargs)

    def add_argument_group(self, *args: Any, **kwargs: Any) -> _Only:
        return _Only(self.group.add_argument_group(*args, **kwargs), self.dests)

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Only:
        return _Only(self.group.add_mutually_exclusive_group(**kwargs), self.dests)
