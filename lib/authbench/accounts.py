"""Which account each journey logs in with: one account (as in 2012), a CSV file, or a template.

Passwords live only in `Account.password`; its repr, and everything written from it, omit them.
"""

from __future__ import annotations

import csv
import io
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import AuthbenchError

ORDERS = ("sequential", "random")
MAX_CSV_CHARS = 64_000_000  # an accounts file longer than this is a mistake (a million accounts take ~30 MB)
MAX_TEMPLATE_ACCOUNTS = 1_000_000
_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")


class AccountsError(AuthbenchError, ValueError):
    """Unreadable or malformed account source; the message says which and how to fix it."""


@dataclass(frozen=True)
class Account:
    username: str
    password: str = field(repr=False)


def from_template(template: str, password_rule: str) -> list[Account]:
    """`user{000..999}` → user000 … user999 (zero padding from the bounds); password `pw-{user}`."""
    match = _RANGE.search(template)
    if not match or len(_RANGE.findall(template)) != 1:
        raise AccountsError(f"account template {template!r} needs exactly one range like user{{000..999}}")
    low, high = int(match[1]), int(match[2])
    if high < low or high - low + 1 > MAX_TEMPLATE_ACCOUNTS:
        raise AccountsError(f"account template {template!r}: range must go up, at most {MAX_TEMPLATE_ACCOUNTS:,}")
    if "{user}" not in password_rule:
        raise AccountsError("password rule must contain {user}, e.g. pw-{user}")
    width = len(match[1])
    names = [template[: match.start()] + f"{n:0{width}d}" + template[match.end():] for n in range(low, high + 1)]
    return [Account(name, password_rule.replace("{user}", name)) for name in names]


def from_csv(path: str | Path) -> list[Account]:
    """Rows of user,password; a header row `user,password` (any case) is skipped."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            text = handle.read(MAX_CSV_CHARS + 1)  # /dev/zero or a huge file: refused, not read to the end
        if len(text) > MAX_CSV_CHARS:
            raise AccountsError(f"accounts file {str(path)!r} is longer than {MAX_CSV_CHARS // 1_000_000} million "
                                "characters; give a CSV of user,password lines")
        rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row and any(c.strip() for c in row)]
    except OSError as exc:
        raise AccountsError(f"cannot read accounts file {str(path)!r}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise AccountsError(f"accounts file {str(path)!r} is not a UTF-8 CSV: {exc}") from None
    if rows and [cell.strip().lower() for cell in rows[0][:2]] == ["user", "password"]:
        rows = rows[1:]
    accounts = []
    for number, row in enumerate(rows, start=1):
        if len(row) < 2 or not row[0].strip():
            raise AccountsError(f"accounts file {str(path)!r}, row {number}: expected user,password")
        accounts.append(Account(row[0].strip(), row[1]))
    if not accounts:
        raise AccountsError(f"accounts file {str(path)!r} has no accounts")
    return accounts


class AccountPicker:
    """Hands out accounts in order or at random (seeded, so a run can be repeated)."""

    def __init__(self, accounts: list[Account], order: str = "sequential", seed: int | None = None) -> None:
        if order not in ORDERS:
            raise AccountsError(f"account order {order!r} is not one of {', '.join(ORDERS)}")
        if not accounts:
            raise AccountsError("no accounts to log in with")
        self._accounts = accounts
        self._random = random.Random(seed) if order == "random" else None
        self._next = 0
        self._pool = accounts  # what pick() takes from: all, or a worker's share

    def __len__(self) -> int:
        return len(self._accounts)

    def share(self, indexes: Iterable[int], users: int) -> None:
        """From now on take only a worker's share: the accounts whose position, modulo the pattern's `users`, is one
        of this worker's user `indexes`. Workers then never log one account in at the same time, as one process's
        users never do (an IdP that writes a user on its first login, such as Keycloak importing from LDAP, fails
        one of two such logins), and together they still use every account."""
        mine = set(indexes)
        self._pool = [a for i, a in enumerate(self._accounts) if users and i % users in mine] or self._accounts

    def pick(self) -> Account:
        if self._random is not None:
            return self._random.choice(self._pool)
        account = self._pool[self._next % len(self._pool)]
        self._next += 1
        return account
