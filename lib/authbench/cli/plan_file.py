"""Every option of a subcommand from $AUTHBENCH_<OPTION> or a TOML plan file (`--config`).

Locust users expect locust.conf and LOCUST_*, k6 users options files and K6_*. The values become the
subcommand parser's defaults before it parses: the command line still wins, argparse's required and
mutually exclusive checks still apply. They are converted and checked here, so that an error (one line,
exit 2: `command.error`) never shows a value: a variable may hold a secret.
Precedence: command line > environment > plan file > built-in default.
"""

from __future__ import annotations

import argparse
import contextlib
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

ENV_PREFIX = "AUTHBENCH_"
CONFIG_OPTION = "--config"
CONFIG_ENV = ENV_PREFIX + "CONFIG"
FLAG_WORDS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}  # any case
FLAG_HINT = "1, 0, true, false, yes or no"
TYPE_WORDS = {int: "a whole number", float: "a number"}
TOML_TYPES = {dict: "table", list: "array", bool: "boolean"}  # anything else a TOML file holds: a date or time
TABLES_KEY, TABLES_OPTION = "journey", "--journey-tables"  # a run's --mix journeys of their own (cli/mix_options)
SETTABLE = (argparse._StoreAction, argparse._StoreConstAction, argparse._AppendAction)  # not help, version, …

Values = dict[argparse.Action, tuple[str, Any]]  # action → (where the value came from, for errors; the value)


@contextlib.contextmanager
def applied(parser: argparse.ArgumentParser, argv: Sequence[str], environ: Mapping[str, str]) -> Iterator[None]:
    """Parse inside: argv's subcommand has --config, and defaults from `environ` and its plan file. Restored
    after, so code comparing a value with its option's default (a worker's command line) sees them as given."""
    command, rest = _subcommand(parser, argv)
    if command is None or "-" not in command.prefix_chars:  # `authrate` has OpenDJ's parser of its own
        yield
        return
    if CONFIG_OPTION not in command._option_string_actions:
        command.add_argument(CONFIG_OPTION, metavar="FILE", help="a TOML plan file of options (default "
                             f"${CONFIG_ENV}); each option also from ${ENV_PREFIX}<OPTION> (docs/running.md)")
    saved = [(action, action.default, action.required) for action in command._actions]
    try:
        _set_defaults(command, rest, environ)
        yield
    finally:
        for action, default, required in saved:
            action.default, action.required = default, required


def _subcommand(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[Any, list[str]]:
    """The (innermost: `lab up`) subcommand's parser and the arguments after its name; None when none is named."""
    command, rest = None, list(argv)
    while sub := next((a for a in (command or parser)._actions if isinstance(a, argparse._SubParsersAction)), None):
        index = next((i for i, token in enumerate(rest) if not token.startswith("-")), None)
        if index is None or rest[index] not in sub.choices:
            return None, []
        command, rest = sub.choices[rest[index]], rest[index + 1:]
    return command, rest


def _set_defaults(command: argparse.ArgumentParser, rest: list[str], environ: Mapping[str, str]) -> None:
    options = {s[2:]: a for a in command._actions for s in a.option_strings if s.startswith("--") and s[2:].islower()
               and a.help != argparse.SUPPRESS and a.dest != "config" and isinstance(a, SETTABLE)}
    given, config = _given(command, rest)
    if any(isinstance(action, argparse._HelpAction) for action in given):
        return  # --help works whatever the environment holds
    layers = [_from_env(command, options, environ)]
    if path := config or environ.get(CONFIG_ENV):
        layers.append(_from_file(command, options, path))
    rivals = {a: {r for g in command._mutually_exclusive_groups if a in g._group_actions for r in g._group_actions}
              - {a} for a in command._actions}
    taken, active = set(given), set(given)  # decided by a higher layer; of those, set to a value (not a flag off)
    for values in layers:
        chosen = {a: v for a, v in values.items() if a not in taken and not rivals[a] & active}
        on = {a for a, (_, v) in chosen.items() if not isinstance(a, argparse._StoreConstAction) or v == a.const}
        for action, (where, value) in chosen.items():
            if action in on and (other := next((chosen[r][0] for r in rivals[action] & on), None)):
                command.error(f"{where} and {other} are alternatives (options of one mutually exclusive group): "
                              "keep one")
            action.default, action.required = value, False
        taken |= chosen.keys()
        active |= on


def _given(command: argparse.ArgumentParser, rest: list[str]) -> tuple[set[argparse.Action], str | None]:
    """The options on the command line (abbreviated as argparse allows), and --config's value."""
    given, config = set(), None
    for index, token in enumerate(rest):
        if token == "--":
            break
        name, equals, value = token.partition("=")
        action = command._option_string_actions.get(name) if token.startswith("-") else None
        if action is None and name.startswith("--"):
            matches = {a for s, a in command._option_string_actions.items() if s.startswith(name)}
            action = matches.pop() if len(matches) == 1 else None
        if action is not None:
            given.add(action)
            if action.dest == "config":
                config = value if equals else next(iter(rest[index + 1:index + 2]), None)
    return given, config


def _from_env(command: argparse.ArgumentParser, options: dict[str, argparse.Action],
              environ: Mapping[str, str]) -> Values:
    """Only variables naming an option of this subcommand; an empty one is unset (compose's ${X:-})."""
    values: Values = {}
    for name, action in options.items():
        variable = ENV_PREFIX + name.upper().replace("-", "_")
        if environ.get(variable):
            values[action] = (f"${variable}", _convert(command, action, f"${variable}", environ[variable], True))
    return values


def _from_file(command: argparse.ArgumentParser, options: dict[str, argparse.Action], path: str) -> Values:
    try:
        with open(path, "rb") as file:
            document = tomllib.load(file)
    except OSError as exc:
        command.error(f"cannot read the plan file {path}: {exc.strerror}; check --config (or ${CONFIG_ENV})")
    except UnicodeDecodeError:
        command.error(f"the plan file {path} is not UTF-8 text; save it as UTF-8")
    except tomllib.TOMLDecodeError as exc:
        command.error(f"the plan file {path} is not valid TOML: {exc}; fix it there")
    values: Values = {}
    tables = command._option_string_actions.get(TABLES_OPTION)
    for key, value in document.items():
        where = f"{path}: {key!r}"
        if key == TABLES_KEY and tables is not None:  # [journey.NAME]: a --mix's journeys, checked by the command
            if not isinstance(value, dict):
                command.error(f"{where} holds [journey.NAME] tables of --mix journeys; give it as such")
            values[tables] = (where, value)
            continue
        action = options.get(key.replace("_", "-"))
        if key.replace("_", "-") == "config":
            command.error(f"{where}: a plan file cannot name another; remove it")
        if action is None:
            command.error(f"{where} is not an option of {command.prog}; remove it or correct its name")
        if action in values:
            command.error(f"{where} is given twice (with - and with _); keep one")
        values[action] = (where, _convert(command, action, where, value, False))
    return values


def _convert(command: argparse.ArgumentParser, action: argparse.Action, where: str, value: Any, env: bool) -> Any:
    """As argparse would from the command line: a flag on or off, one or several values each `type`d."""
    option = action.option_strings[-1]
    if isinstance(action, argparse._StoreConstAction):
        on = FLAG_WORDS.get(value.strip().lower()) if env else value if isinstance(value, bool) else None
        if on is None:
            command.error(f"{where}: {option} is a flag; give {FLAG_HINT if env else 'true or false'}")
        return action.const if on else action.default
    several = isinstance(action, argparse._AppendAction)
    if isinstance(value, list) and not several:
        command.error(f"{where}: {option} takes one value, not an array")
    return [_scalar(command, action, where, v) for v in (value if isinstance(value, list) else [value])] if several \
        else _scalar(command, action, where, value)


def _scalar(command: argparse.ArgumentParser, action: argparse.Action, where: str, value: Any) -> Any:
    option = action.option_strings[-1]
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        command.error(f"{where}: a {TOML_TYPES.get(type(value), 'date or time')} is not a value of {option}; "
                      "give a string or a number")
    try:
        result = action.type(str(value)) if callable(action.type) else str(value)
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        command.error(f"{where} is not a valid value of {option}"
                      + (f"; give {TYPE_WORDS[action.type]}" if action.type in TYPE_WORDS else ""))
    if action.choices is not None and result not in action.choices:
        command.error(f"{where}: {option} takes one of {', '.join(map(str, action.choices))}")
    return result
