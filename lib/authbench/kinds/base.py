"""What a journey kind is, and what it hands the run path: a checked journey ready for load.

A kind turns a target and its options into a `Journey` (the Locust user class, its settings, the record
of the run, the one-journey preflight). Everything else — patterns, rates, workers, results, faults,
reports — is the run path's, the same for every kind. A kind that cannot do something says so in its
`Capabilities`, and the run path refuses that request in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol

from ..errors import AuthbenchError


@dataclass(frozen=True)
class Capabilities:
    """What a kind supports beyond a local closed-model run (which every kind does)."""

    distributed: bool = True  # --workers N, --master and --worker
    open_model: bool = True  # --rate, --levels, `capacity`
    returning_users: bool = False  # --reuse-session: journeys classified fresh/reused/lost, Test 4 verdicts
    why_not_distributed: str = ""  # said when a distributed run is refused


@dataclass(frozen=True)
class AccountOptions:
    """Where the accounts come from: one account, a CSV of user,password, or a template and password rule."""

    account: str | None = None
    password_file: str | None = None
    accounts_csv: str | None = None
    accounts_template: str | None = None
    password_rule: str = "pw-{user}"  # a lab target without a template uses the lab's own
    order: str = "sequential"
    seed: int | None = None


@dataclass(frozen=True)
class CommonOptions:
    """The options every kind reads: the target, its accounts, TLS, the request timeout and the lab."""

    target: str
    accounts: AccountOptions = field(default_factory=AccountOptions)
    ca_bundle: str | None = None
    insecure: bool = False
    timeout: float = 10.0
    lab_dir: str = ""
    pace: float = 0.0  # seconds from one journey's start to the user's next (0: back to back)


class Check(Protocol):
    """A preflight's result, shown before the load and saved in the run folder as preflight.txt."""

    keep_on_failure: bool  # a failed one is saved too (a trail worth reading), not only a passed one

    def lines(self) -> list[str]: ...

    def problem(self, saved: Path | None = None) -> str | None: ...

    def save(self, folder: Path) -> Path: ...


@dataclass
class Journey:
    """One kind's journey, checked and ready: what the run path needs from a kind."""

    user_class: type  # a user.JourneyUser
    settings: Any  # read by the user class from its RunContext
    record: dict[str, Any]  # describes the journey in summary.json's config (never a secret)
    target: str  # the URL loaded, as recorded and shown
    load_key: str  # targets_lock's key: the lab as a whole, or the target's origin
    preflight: Callable[[], Check]  # one whole journey before any load
    lab_dir: str = ""  # the lab this journey loads ("" for a target outside the lab)
    backend: str | None = None  # the lab cluster loaded: fault plans name its components
    sampled: tuple[str, ...] = ()  # lab servers whose CPU is sampled per cell
    churn_port: int | None = None  # a new connection per journey towards this port: TIME_WAIT is counted
    summary_line: str = ""  # what the preflight proved, said before the plan (e.g. "LDAP bind ok")
    user_classes: tuple[type, ...] = ()  # --mix (kinds.mixed): one user class per journey, user_class the first
    also_loads: tuple[str, ...] = ()  # --mix: the load_keys of its other targets, locked too

    @property
    def classes(self) -> tuple[type, ...]:
        return self.user_classes or (self.user_class,)

    @property
    def load_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.load_key, *self.also_loads)))


@dataclass(frozen=True)
class Kind:
    """A journey kind: which targets it takes, its options and how it prepares a journey."""

    name: str  # --kind NAME
    label: str  # what its journeys are, e.g. "LDAP binds"
    targets: str  # the --target forms it takes, for --help and its errors
    claims: Callable[[str], bool]  # whether a --target is this kind's (checked in registry order)
    options: type  # a frozen dataclass of the options it reads beyond CommonOptions: fields named as dests
    prepare: Callable[[CommonOptions, Any], Journey]  # (common options, its options) → a checked journey
    can: Capabilities = Capabilities()
    add_options: Callable[[Any], None] | None = None  # its own option group (shared ones: kinds.SHARED_GROUPS)
    # Named journey variants for --mix: name → overrides of its options (fields of `options`), e.g. SAML's
    # {"login": {"reuse_session": False}, "returning-sso": {"reuse_session": True}}; docs/running.md
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False, compare=False)

    @property
    def title(self) -> str:
        return f"{self.label} ({self.targets})"

    def option_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self.options))

    def variant(self, options: Any, name: str) -> Any:
        """Its options with the variant `name`'s overrides; AuthbenchError naming its variants when it has none such."""
        if name not in self.variants:
            offered = ", ".join(self.variants) or "none yet"
            raise AuthbenchError(f"{self.label} offers no journey {name!r} for --mix (its variants: {offered}); "
                                 "name one of them, or a [journey.NAME] table of the --config plan file")
        overrides = self.variants[name]
        defaults = {f.name: f.default for f in fields(options)}
        for option, value in overrides.items():
            given = getattr(options, option)
            if given != defaults.get(option) and given != value:
                raise AuthbenchError(f"--{option.replace('_', '-')} contradicts the journey {name!r} of --mix (a "
                                     f"{self.label} variant that sets it to {value}); drop it, or name another")
        return replace(options, **overrides)

    def refuse(self, request: str, why: str = "") -> AuthbenchError:
        """The one-line refusal of something this kind cannot do, exit 2."""
        return AuthbenchError(f"{self.label} cannot {request}" + (f": {why}" if why else ""))


@dataclass(frozen=True)
class NoOptions:
    """A kind without options of its own."""


@dataclass(frozen=True)
class OptionGroup:
    """Options shared by the kinds that read them (kind.options' fields), defined once: `add(group)` adds them
    to a parser group (the CLI's, or Locust's under plain `locust -f`)."""

    label: str
    add: Callable[[Any], None]
