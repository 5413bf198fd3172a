"""What the lab accepts, checked before anything starts: backends, extras, sizes, addresses and ports.

Every problem is a `LabError` a user can act on (one line; exit status 2 for usage and environment,
1 for unhealthy parts), raised here or by the orchestration in `lab.py`.
"""

from __future__ import annotations

import re

from . import config as cfg
from . import processes

MAX_WORKERS = 64
MAX_THREADS = 256
MIN_PORT = 1024
MAX_PORT = 65535
_COOKIE_PATH = re.compile(r"/[A-Za-z0-9._~!$&'()*+,=:@%/-]*")  # no ';', space or control
ALL_ADDRESSES = "0.0.0.0"  # noqa: S104  (only for --listen, inside a container's own network namespace)
LISTEN_ADDRESSES = ("", processes.LOOPBACK, ALL_ADDRESSES)
PUBLIC_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


class LabError(Exception):
    """A lab problem a user can act on; `exit_code` 2 for usage/environment, 1 for unhealthy parts."""

    def __init__(self, message: str, exit_code: int = 2, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.details = details or []


def parse_backends(text: str) -> list[str]:
    """`all`, one name or a comma list, returned in the canonical (port plan) order."""
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    if wanted == ["all"]:
        return list(cfg.BACKENDS)
    unknown = [name for name in wanted if name not in cfg.BACKENDS]
    if unknown or not wanted:
        raise LabError(f"unknown backend {', '.join(map(repr, unknown)) or repr(text)}: choose from "
                       f"{', '.join(cfg.BACKENDS)}, a comma list of them, or all")
    return [name for name in cfg.BACKENDS if name in wanted]


def validate(config: cfg.LabConfig) -> None:
    if not config.backends:
        raise LabError(f"no backend given: choose from {', '.join(cfg.BACKENDS)} or all")
    parse_backends(",".join(config.backends))
    if not 1 <= config.users <= cfg.MAX_USERS:
        raise LabError(f"--users must be between 1 and {cfg.MAX_USERS}, got {config.users}")
    if config.stickiness not in cfg.STICKINESS:
        raise LabError(f"stickiness must be one of {', '.join(cfg.STICKINESS)}, got {config.stickiness!r}")
    if not 1 <= config.workers <= MAX_WORKERS:
        raise LabError(f"--workers must be between 1 and {MAX_WORKERS}, got {config.workers}")
    if not 1 <= config.threads <= MAX_THREADS:
        raise LabError(f"--threads must be between 1 and {MAX_THREADS}, got {config.threads}")
    parse_extras(",".join(config.extras))
    if "keycloak" in config.extras and "postgres" not in config.extras:
        raise LabError("keycloak needs the lab's PostgreSQL: start the lab with --with postgres,keycloak")
    if config.keycloak_design not in cfg.KEYCLOAK_DESIGNS:
        raise LabError(f"--keycloak-design must be one of {', '.join(cfg.KEYCLOAK_DESIGNS)}, "
                       f"got {config.keycloak_design!r}")
    if config.timings not in cfg.TIMINGS:
        raise LabError(f"--timings must be one of {', '.join(cfg.TIMINGS)}, got {config.timings!r}")
    if not _COOKIE_PATH.fullmatch(config.idp_cookie_path):
        raise LabError(f"--idp-cookie-path must be a URL path starting with / (like / or /idp), "
                       f"got {config.idp_cookie_path!r}")
    if config.host != processes.LOOPBACK:
        raise LabError(f"the lab only binds {processes.LOOPBACK}, not {config.host}")
    if config.listen not in LISTEN_ADDRESSES:
        raise LabError(f"--listen must be {processes.LOOPBACK} or {ALL_ADDRESSES} (in a container), "
                       f"not {config.listen!r}")
    if config.public_host and not PUBLIC_HOST.fullmatch(config.public_host):
        raise LabError(f"--public-host {config.public_host!r} is not a host name or IPv4 address "
                       "(letters, digits, '-' and '.')")
    ports = config.all_ports().values()
    if min(ports) < MIN_PORT or max(ports) > MAX_PORT:
        raise LabError(f"--base-port {config.base_port} puts lab ports outside {MIN_PORT}..{MAX_PORT}")


def parse_extras(text: str) -> list[str]:
    """`--with` values (a comma list, repeatable) in the canonical order; unknown names are refused.
    Keycloak brings PostgreSQL, its database and cluster registry."""
    wanted = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(wanted - set(cfg.EXTRAS))
    if unknown:
        raise LabError(f"unknown --with {', '.join(map(repr, unknown))}: choose from {', '.join(cfg.EXTRAS)}")
    if "keycloak" in wanted:
        wanted.add("postgres")
    return [name for name in cfg.EXTRAS if name in wanted]
