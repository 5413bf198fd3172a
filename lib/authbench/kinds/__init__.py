"""Journey kinds as plug-ins: one sub-package per kind, and the registry that picks one for a target.

A kind (`base.Kind`) names the targets it takes, the options it reads and how it prepares a journey; the
run path does the rest alike for every kind. Adding a kind is one new sub-package and one line in KINDS.
Option groups are defined once and titled by the kinds that read them, so `run --help` shows which
options apply to which targets, and an option of another kind is refused, not ignored.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..errors import AuthbenchError
from . import common, custom, ldap, oidc, postgres, privacyidea, saml
from .base import Kind, OptionGroup

# Checked in this order; SAML takes any other URL. `custom` is chosen by -f, never by a target.
KINDS: tuple[Kind, ...] = (ldap.KIND, postgres.KIND, privacyidea.KIND, oidc.KIND, custom.KIND, saml.KIND)

# Options several kinds read, defined once; then each kind's own group, in KINDS' order.
SHARED_GROUPS = (OptionGroup("browser-like logins", common.add_login_options),
                 OptionGroup("connections", common.add_connection_options))
OPTION_GROUPS: tuple[OptionGroup, ...] = (
    *SHARED_GROUPS, *(OptionGroup(kind.label, kind.add_options) for kind in KINDS if kind.add_options))


def names() -> list[str]:
    return [kind.name for kind in KINDS]


def by_name(name: str) -> Kind:
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise AuthbenchError(f"--kind {name!r} is not a journey kind; give one of {', '.join(names())}")


def kind_for(target: str, name: str | None = None, locustfile: str | None = None) -> Kind:
    """The kind --kind names, else `custom` with -f, else the first that claims the target."""
    if name:
        return by_name(name)
    if locustfile:
        return custom.KIND
    try:
        return next(kind for kind in KINDS if kind.claims(target))
    except ValueError as exc:  # urlsplit's own: an unclosed [IPv6 address, a port that is no number
        raise AuthbenchError(f"--target {target!r} is not a URL ({exc}); give an http(s), ldap(s) or "
                             "postgresql URL, or lab:NAME") from None


def users_of(dest: str) -> list[Kind]:
    """The kinds that read the option `dest`."""
    return [kind for kind in KINDS if dest in kind.option_names()]


def options_of(kind: Kind, values: dict[str, Any]) -> Any:
    """The kind's typed options from `values` (an option → value mapping; missing ones take their defaults)."""
    return kind.options(**{f.name: values[f.name] for f in fields(kind.options) if f.name in values})


def foreign_options(kind: Kind, given: dict[str, Any]) -> list[str]:
    """Options of other kinds that were given a value (not their default): refused, never ignored."""
    own = set(kind.option_names())
    others = {name for other in KINDS for name in other.option_names()} - own
    return sorted(name for name in others if name in given)
