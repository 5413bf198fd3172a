"""The one gate through which a name becomes a path: run ids, campaign ids, target and component names.

A name is one path component that cannot climb out of its folder or hide in it: letters, digits,
'.', '_' and '-', starting with a letter or digit, ASCII only (full-width digits look the same but
are other file names), and short enough for any file system.
"""

from __future__ import annotations

import re

from .errors import AuthbenchError

MAX_NAME_LENGTH = 100  # characters; a path component may hold 255 bytes, room is left for suffixes
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)


class UnsafeName(AuthbenchError, ValueError):
    """A name that cannot be a path component (a ValueError: callers turn those into one-line errors)."""


def is_safe_name(name: object) -> bool:
    return isinstance(name, str) and bool(_NAME.fullmatch(name)) and len(name) <= MAX_NAME_LENGTH


def safe_name(name: str, what: str = "name") -> str:
    """`name` unchanged when it is a safe path component, else ValueError naming `what` and the rule."""
    if not is_safe_name(name):
        raise UnsafeName(f"{what} {name!r}: use letters, digits, '.', '_' and '-' only, starting with a letter "
                         f"or digit, at most {MAX_NAME_LENGTH} characters")
    return name
