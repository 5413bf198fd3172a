"""authrate's argument generators (`-g`) and the templates they fill (`-D`, `-b`, the filter).

Generators, as authrate names them: `rand(min,max)` and `inc(min,max)` (numbers, both ends
included; `inc` wraps around), `rand(file)` and `inc(file)` (lines of a file), `randstr(len[,charset])`
with `[a-z]` ranges in the charset (default `[A-Z][a-z][0-9]`); anything else is a static string.
Templates: `{}` takes the next argument in order, `{n}` the n-th (from 1). In search-then-bind the
DN found is appended as the last argument. Every mistake is a `TemplateError` with a one-line message.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CHARSET = "[A-Z][a-z][0-9]"
CALL = re.compile(r"^(rand|inc|randstr)\((.*)\)$", re.S)
FIELD = re.compile(r"\{(\d*)\}")
RANGE = re.compile(r"\[(.)-(.)\]")


class TemplateError(ValueError):
    """A malformed generator or template: the message names it and says what is expected."""


Generator = Callable[[random.Random], str]


def _int(text: str, spec: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise TemplateError(f"generator {spec!r}: {text.strip()!r} is not an integer") from None


def _lines(path: str, spec: str) -> list[str]:
    try:
        lines = [line for line in Path(path).read_text().splitlines() if line]
    except OSError as exc:
        raise TemplateError(f"generator {spec!r}: give {spec.split('(')[0]}(min,max) or "
                            f"{spec.split('(')[0]}(file); cannot read file {path!r} ({exc.strerror})") from None
    if not lines:
        raise TemplateError(f"generator {spec!r}: file {path!r} has no lines")
    return lines


def expand_charset(spec: str, charset: str) -> str:
    """`[a-z]` ranges expanded, other characters taken as they are; order kept, duplicates dropped."""
    out: list[str] = []
    pos = 0
    while pos < len(charset):
        match = RANGE.match(charset, pos)
        if match:
            low, high = match.group(1), match.group(2)
            if low > high:
                raise TemplateError(f"generator {spec!r}: character range [{low}-{high}] runs backwards")
            out.extend(chr(c) for c in range(ord(low), ord(high) + 1))
            pos = match.end()
        elif charset[pos] in "[]":
            raise TemplateError(f"generator {spec!r}: {charset!r} is not a charset; write ranges as [a-z]")
        else:
            out.append(charset[pos])
            pos += 1
    chars = "".join(dict.fromkeys(out))
    if not chars:
        raise TemplateError(f"generator {spec!r}: the charset is empty")
    return chars


def _counter(values: Sequence[str] | range) -> Generator:
    state = {"next": 0}

    def inc(_: random.Random) -> str:
        value = values[state["next"] % len(values)]
        state["next"] += 1
        return str(value)

    return inc


def parse_generator(spec: str) -> Generator:
    """One `-g` argument as a function of the random source (shared, so a seed reproduces a run)."""
    match = CALL.match(spec.strip())
    if not match:
        if "(" in spec and spec.split("(")[0] in ("rand", "inc", "randstr"):
            raise TemplateError(f"generator {spec!r}: unbalanced parentheses")
        return lambda _: spec
    name, inner = match.group(1), match.group(2)
    args = inner.split(",") if name != "randstr" else inner.split(",", 1)
    if name == "randstr":
        length = _int(args[0], spec)
        if length < 1:
            raise TemplateError(f"generator {spec!r}: the length must be at least 1")
        chars = expand_charset(spec, args[1] if len(args) > 1 else DEFAULT_CHARSET)
        return lambda rng: "".join(rng.choice(chars) for _ in range(length))
    if len(args) == 1:
        if not inner.strip():
            raise TemplateError(f"generator {spec!r}: give {name}(min,max) or {name}(file)")
        lines = _lines(inner, spec)
        return _counter(lines) if name == "inc" else (lambda rng: rng.choice(lines))
    if len(args) != 2:
        raise TemplateError(f"generator {spec!r}: give {name}(min,max) or {name}(file)")
    low, high = _int(args[0], spec), _int(args[1], spec)
    if low > high:
        raise TemplateError(f"generator {spec!r}: min {low} is greater than max {high}")
    if name == "inc":
        return _counter(range(low, high + 1))
    return lambda rng: str(rng.randint(low, high))


@dataclass(frozen=True)
class Template:
    """Literal text and argument indexes (0-based) alternating: ready to fill without re-parsing."""

    text: str
    parts: tuple[str | int, ...]

    @property
    def highest(self) -> int:
        return max((p for p in self.parts if isinstance(p, int)), default=-1)

    def fill(self, args: Sequence[str]) -> str:
        return "".join(args[p] if isinstance(p, int) else p for p in self.parts)


def parse_template(text: str, what: str, arguments: int) -> Template:
    """`what` names the option in messages; `arguments` is how many the template may use."""
    parts: list[str | int] = []
    pos = sequential = 0
    for match in FIELD.finditer(text):
        literal = text[pos:match.start()]
        _check_braces(literal, text, what)
        parts.append(literal)
        if match.group(1):
            index = int(match.group(1)) - 1
            if index < 0:
                raise TemplateError(f"{what} {text!r}: arguments are numbered from {{1}}")
        else:
            index, sequential = sequential, sequential + 1
        if index >= arguments:
            raise TemplateError(f"{what} {text!r} uses argument {index + 1} but there are only {arguments} "
                                "(give one -g per argument)")
        parts.append(index)
        pos = match.end()
    _check_braces(text[pos:], text, what)
    parts.append(text[pos:])
    return Template(text, tuple(p for p in parts if p != ""))


def _check_braces(literal: str, text: str, what: str) -> None:
    if "{" in literal or "}" in literal:
        raise TemplateError(f"{what} {text!r}: unbalanced or malformed braces; use {{}} or {{1}}, {{2}}, …")


class Arguments:
    """The `-g` generators together: one fresh argument list per authentication."""

    def __init__(self, specs: Sequence[str], seed: int | None = None) -> None:
        self.generators = [parse_generator(spec) for spec in specs]
        self.seed = seed
        self.random = random.Random(seed)

    def __len__(self) -> int:
        return len(self.generators)

    def next(self) -> list[str]:
        return [generate(self.random) for generate in self.generators]


