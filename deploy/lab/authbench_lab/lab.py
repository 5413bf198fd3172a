"""Orchestration of the lab: `up`, `down`, `status` and per-component stop/start for fault injection.

The state file (`lab.json`) is the only record of what runs: `down` and the fault-injection commands
touch nothing it does not list, and every pid in it is checked against its command line first.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from . import components, haproxy, pki, postgres, processes, slapd
from . import config as cfg
from .checks import ALL_ADDRESSES, LabError, parse_backends, parse_extras, validate  # noqa: F401 (lab.* API)
from .components import extra_components  # noqa: F401 (lab.* API)
from .keycloak import server as keycloak
from .privacyidea import server as privacyidea

PATH_ENV = "AUTHBENCH_LAB_PATH"  # overrides where the server binaries are looked up (tests use it)
EXTRA_PATH = ("/usr/local/sbin", "/usr/sbin", "/sbin")  # slapd lives in sbin, often not on a user's PATH
SETUP_HINT = "run 'make setup' as root (apt-get install slapd ldap-utils memcached redis-server haproxy openssl)"
E2E_TIMEOUT = 10.0  # HAProxy marks a server up within a check interval once the app answers
STATUS_THREADS = 8
STATE_VERSION = 1


def extra_binaries(config: cfg.LabConfig) -> dict[str, str]:
    """The optional servers' binaries (PostgreSQL's) when the config has them."""
    if "postgres" not in config.extras:
        return {}
    try:
        return postgres.find_binaries()
    except RuntimeError as exc:
        raise LabError(str(exc)) from None


def find_binaries(search_path: str | None = None) -> dict[str, str]:
    """Absolute paths of the server binaries; one error naming every missing one."""
    path = search_path or os.environ.get(PATH_ENV) or os.pathsep.join([os.environ.get("PATH", ""), *EXTRA_PATH])
    found = {name: shutil.which(name, path=path) for name in components.BINARIES}
    missing = [name for name, where in found.items() if where is None]
    if missing:
        raise LabError(f"missing programs: {', '.join(missing)}; {SETUP_HINT}")
    if importlib.util.find_spec("gunicorn") is None:
        raise LabError("python package gunicorn is missing; run 'pip install -r requirements.txt'")
    return {name: str(where) for name, where in found.items()}


def _check_ports(config: cfg.LabConfig, starting: set[str]) -> None:
    owners = components.port_owners(config)
    for port_name, port in config.all_ports().items():
        owner = owners[port_name]
        if owner in starting and not processes.port_is_free(port):
            raise LabError(f"port {port} ({port_name}, needed by {owner}) is already in use on "
                           f"{processes.LOOPBACK}; stop what uses it or pick another --base-port "
                           f"(now {config.base_port})")


# -- state file --------------------------------------------------------------------------------------


BALANCER_STATS_TIMEOUT = 2.0  # seconds for one read of HAProxy's statistics


def read_state(run_dir: Path | str) -> dict | None:
    path = Path(run_dir).resolve() / "lab.json"
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LabError(f"cannot read lab state {path}: {exc}") from None
    return state if isinstance(state, dict) and "components" in state else None


def _write_state(config: cfg.LabConfig, state: dict) -> None:
    """Atomic replace, so a crash mid-write never loses track of running processes."""
    tmp = config.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(config.state_file)


@contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """One lab command at a time per run directory (released by the kernel if we die)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabError(f"another authbench lab command is running in {run_dir}") from None
        yield


def _alive(entry: dict) -> bool:
    return processes.is_running(entry.get("pid"), entry["fragment"])


def _running(state: dict | None) -> list[str]:
    return [name for name, entry in (state or {}).get("components", {}).items() if _alive(entry)]


def _config_of(state: dict) -> cfg.LabConfig:
    return cfg.LabConfig.from_dict(state["config"])


# -- up ----------------------------------------------------------------------------------------------


def up(config: cfg.LabConfig, search_path: str | None = None) -> dict:
    """Start whatever of the lab is not already running and healthy; returns the state plus a summary."""
    validate(config)
    began = time.perf_counter()
    with _locked(config.run_dir):
        state = read_state(config.run_dir)
        if state is not None and state["config"] != config.to_dict():
            if running := _running(state):
                raise LabError(f"a lab with a different configuration is running in {config.run_dir} "
                               f"({len(running)} components); run 'authbench lab down' first")
            state = None
        binaries = {**find_binaries(search_path), **extra_binaries(config)}
        specs = components.build(config, binaries)
        state = state or {"version": STATE_VERSION, "config": config.to_dict(), "seed": None, "components": {}}
        kept, to_start = _triage(config, state, specs)
        state.pop("keycloak_install", None)  # what this `up` cost to install, if anything
        _check_ports(config, {spec.name for spec in to_start})
        seed = _prepare(config, state, binaries, to_start)
        _write_state(config, state)
        deadline = time.monotonic() + processes.HEALTH_TIMEOUT
        for spec in to_start:
            if spec.name == "privacyidea":  # its enrolment looks every user up in slapd: slapd answers first
                _wait(config, "ldap", state["components"]["ldap"], deadline)
                state["privacyidea"] = _setup_call("preparing privacyIDEA", privacyidea.enrol, config)
                deadline = time.monotonic() + processes.HEALTH_TIMEOUT
            if spec.name in keycloak.COMPONENTS:
                _before_keycloak(config, state, spec.name)
            state["components"][spec.name] = _launch(config, spec)
            _write_state(config, state)
        for spec in to_start:
            _wait(config, spec.name, state["components"][spec.name],
                  max(deadline, time.monotonic() + components.health_timeout(spec.name)))
        if to_start:
            _check_balanced(config)
    return {
        "state": state,
        "kept": kept,
        "started": [spec.name for spec in to_start],
        "seed": seed,
        "seconds": round(time.perf_counter() - began, 2),
    }


def _triage(config: cfg.LabConfig, state: dict, specs: list[components.Spec]) -> tuple[list[str], list]:
    """Split into components to keep (running, healthy, same command) and ones to (re)start."""
    entries = state["components"]
    alive = {spec.name for spec in specs if spec.name in entries and _alive(entries[spec.name])}

    def keep(spec: components.Spec) -> bool:
        entry = entries[spec.name]
        healthy, _detail = processes.check(components.probe(config, spec.name, spec.port))
        if healthy and _same_command(entry["command"], spec.command):
            return True
        processes.stop(entry["pid"], entry["fragment"])
        return False

    candidates = [spec for spec in specs if spec.name in alive]
    with ThreadPoolExecutor(STATUS_THREADS) as pool:
        verdicts = dict(zip([spec.name for spec in candidates], pool.map(keep, candidates), strict=True))
    kept = [spec.name for spec in specs if verdicts.get(spec.name)]
    return kept, [spec for spec in specs if not verdicts.get(spec.name)]


def _same_command(old: list[str], new: list[str]) -> bool:
    """Equal commands; `python` and `python3` of one venv (`-m authbench` vs the script) count as one."""
    if not old or not new:
        return old == new
    return os.path.realpath(old[0]) == os.path.realpath(new[0]) and old[1:] == new[1:]


def _prepare(config: cfg.LabConfig, state: dict, binaries: dict[str, str], to_start: list) -> dict:
    """PKI, LDAP config and seed, HAProxy config, app configs and SP metadata; returns seed info."""
    for directory in components.component_dirs(config):
        directory.mkdir(parents=True, exist_ok=True)
    pki.ensure_server_cert(config.pki_dir, [config.public_host] if config.public_host else [])
    ldap_files = slapd.prepare(config)
    starting = {spec.name for spec in to_start}
    seeded = slapd.seed_info(ldap_files)
    if "ldap" in starting and (seeded is None or seeded["users"] != config.users):
        try:
            seeded = slapd.seed(ldap_files, binaries["slapadd"], config.users)
        except (RuntimeError, OSError) as exc:
            raise LabError(f"seeding LDAP failed: {exc}") from None
        state["seed"] = {**seeded, "fresh": True}
    else:
        state["seed"] = {**(seeded or {"users": config.users, "seconds": None}), "fresh": False}
    haproxy.prepare(config)
    components.write_app_files(config)
    if "postgres" in starting:
        try:
            postgres.prepare(config, binaries)
        except (RuntimeError, OSError) as exc:
            raise LabError(f"preparing PostgreSQL failed: {exc}") from None
    if "privacyidea" in starting:
        _setup_call("preparing privacyIDEA", privacyidea.prepare, config)
    if starting & set(keycloak.COMPONENTS):  # its database is made while PostgreSQL is down
        state["keycloak_install"] = _setup_call("preparing Keycloak", keycloak.prepare, config, binaries,
                                                   "postgres" in starting)
    return state["seed"]


def _launch(config: cfg.LabConfig, spec: components.Spec) -> dict:
    directory = config.component_dir(spec.name)
    log = directory / "server.log"
    started = processes.start(spec.command, log_path=log, pid_path=directory / "pid", cwd=directory,
                              env=spec.env)
    return {
        "pid": started.pid, "port": spec.port, "url": spec.url, "command": spec.command, "env": spec.env,
        "fragment": spec.fragment, "log": str(log), "started_at": round(started.started_at, 3),
    }


def _wait(config: cfg.LabConfig, name: str, entry: dict, deadline: float) -> str:
    probe = components.probe(config, name, entry["port"])
    try:
        return processes.wait_healthy(name, probe, pid=entry["pid"], cmd_fragment=entry["fragment"],
                                      log_path=Path(entry["log"]),
                                      timeout=max(0.0, deadline - time.monotonic()))
    except processes.UnhealthyError as exc:
        raise LabError(str(exc), exit_code=1, details=exc.tail) from None


def _before_keycloak(config: cfg.LabConfig, state: dict, name: str) -> None:
    """One Keycloak node at a time (A creates the schema and the realm), the SP once Keycloak's metadata answers."""
    for needed in keycloak.needs(name):
        _wait(config, needed, state["components"][needed], time.monotonic() + components.health_timeout(needed))
    if name == keycloak.SP:
        _setup_call("wiring the SP to Keycloak", keycloak.configure_sp, config, exit_code=1)


def _setup_call(what: str, function, *args, exit_code: int = 2):
    """A setup step of an optional server; its failure is one line naming the step."""
    try:
        return function(*args)
    except (RuntimeError, OSError, ValueError) as exc:  # keycloak's InstallError is a RuntimeError
        raise LabError(f"{what} failed: {exc}", exit_code=exit_code) from None


def _check_balanced(config: cfg.LabConfig) -> None:
    """End to end through HAProxy's TLS with the lab CA, on every URL a load test may use.

    HAProxy may have marked an app down while it was still importing; this waits for its next check.
    """
    deadline = time.monotonic() + E2E_TIMEOUT
    checks = [(f"{backend} {port_name}", config.cluster_port(backend, port_name), path)
              for backend in config.backends
              for port_name, path in (("lb", components.IDP_HEALTH), ("node-a", components.IDP_HEALTH),
                                      ("node-b", components.IDP_HEALTH), ("sp", components.SP_HEALTH))]
    if "keycloak" in config.extras:
        checks += keycloak.balanced_checks(config)
    for what, port, path in checks:
        probe = processes.http_probe(path, port, tls_ca=config.ca_cert)
        healthy, detail = processes.check(probe)
        while not healthy and time.monotonic() < deadline:
            time.sleep(processes.POLL_INTERVAL)
            healthy, detail = processes.check(probe)
        if not healthy:
            raise LabError(f"{config.https_url(port)}{path} ({what}) is not answering "
                           f"through HAProxy ({detail}); log: {config.component_dir('lb') / 'server.log'}",
                           exit_code=1)


# -- down, status, fault injection -------------------------------------------------------------------


def down(run_dir: Path | str, purge: bool = False) -> dict:
    """Stop what the state lists (newest first); with `purge` also delete the run directory."""
    run_dir = Path(run_dir).resolve()
    if read_state(run_dir) is None:
        return {"found": False, "stopped": [], "purged": False, "run_dir": str(run_dir)}
    began = time.perf_counter()
    with _locked(run_dir):
        state = _require_state(run_dir)
        entries = state["components"]
        stopped = []
        for tier in components.stop_tiers(list(reversed(entries))):
            # a tier's members stop together: gunicorn and memcached each take up to a second to exit
            with ThreadPoolExecutor(len(tier)) as pool:
                results = list(pool.map(lambda name: _stop_entry(entries[name]), tier))
            stopped += [name for name, was_running in zip(tier, results, strict=True) if was_running]
        _write_state(_config_of(state), state)
    if purge:
        shutil.rmtree(run_dir)
    return {"found": True, "stopped": stopped, "purged": purge, "run_dir": str(run_dir),
            "seconds": round(time.perf_counter() - began, 2)}


def _stop_entry(entry: dict) -> bool:
    was_running = processes.stop(entry.get("pid"), entry["fragment"])
    entry["pid"] = None
    return was_running


def _require_state(run_dir: Path | str) -> dict:
    state = read_state(run_dir)
    if state is None:
        raise LabError(f"no lab in {Path(run_dir).resolve()}; start one with 'authbench lab up'")
    return state


def status(run_dir: Path | str) -> list[dict]:
    """One row per component: name, url, pid (None when stopped), healthy, detail, rss_bytes."""
    state = read_state(run_dir)
    if state is None:
        return []
    config = _config_of(state)

    def row(item: tuple[str, dict]) -> dict:
        name, entry = item
        alive = _alive(entry)
        healthy, detail = False, "stopped"
        if alive:
            healthy, detail = processes.check(components.probe(config, name, entry["port"]))
        return {"name": name, "url": entry["url"], "pid": entry["pid"] if alive else None,
                "healthy": healthy, "detail": detail,
                "rss_bytes": processes.rss_bytes(entry["pid"]) if alive else 0}

    with ThreadPoolExecutor(STATUS_THREADS) as pool:
        return list(pool.map(row, state["components"].items()))


def endpoints(run_dir: Path | str) -> list[dict]:
    """The URLs a load test uses, per cluster."""
    state = read_state(run_dir)
    if state is None:
        return []
    return components.endpoints(_config_of(state))


def resolve_name(state: dict, name: str) -> str:
    """Full component name; a bare per-cluster name (`idp-a`) is fine when one cluster is up."""
    known = list(state["components"])
    if name in known:
        return name
    backends = state["config"]["backends"]
    if len(backends) == 1 and f"{backends[0]}/{name}" in known:
        return f"{backends[0]}/{name}"
    raise LabError(f"unknown component {name!r}; valid names: {', '.join(known)}")


def stop_component(run_dir: Path | str, name: str) -> dict:
    """Stop one component (fault injection); returns its name, the stopped pid and whether it ran."""
    run_dir = Path(run_dir).resolve()
    _require_state(run_dir)
    with _locked(run_dir):
        state = _require_state(run_dir)
        name = resolve_name(state, name)
        entry = state["components"][name]
        pid = entry.get("pid")
        was_running = _stop_entry(entry)
        _write_state(_config_of(state), state)
    return {"name": name, "pid": pid, "was_running": was_running}


def start_component(run_dir: Path | str, name: str) -> dict:
    """Start one stopped component again with its stored command and wait until it is healthy."""
    run_dir = Path(run_dir).resolve()
    _require_state(run_dir)
    with _locked(run_dir):
        state = _require_state(run_dir)
        config = _config_of(state)
        name = resolve_name(state, name)
        entry = state["components"][name]
        if _alive(entry):
            return {"name": name, "pid": entry["pid"], "already_running": True}
        _check_ports(config, {name})
        spec = components.Spec(name, entry["command"], entry["fragment"], entry["url"], entry["port"],
                               entry.get("env", {}))
        entry = state["components"][name] = _launch(config, spec)
        _write_state(config, state)
        detail = _wait(config, name, entry, time.monotonic() + components.health_timeout(name))
    return {"name": name, "pid": entry["pid"], "already_running": False, "detail": detail}


def balancer_statuses(run_dir: Path | str, component: str) -> list[str] | None:
    """HAProxy's status of each of its servers that is `component` (`local/idp-a`: server `idp-a` of the backends
    `local-…`; `keycloak-b`: server `keycloak-b` of `keycloak-idp…`), read from its statistics page; [] when no
    server is that component (memcached, LDAP), None when the lab has no balancer to ask or its statistics cannot
    be read."""
    import csv
    import urllib.request

    server = haproxy.servers_of(component)
    url = ((read_state(run_dir) or {}).get("components", {}).get("lb") or {}).get("url")
    if server is None or not url:
        return []
    prefix, name = server
    try:
        with urllib.request.urlopen(f"{url};csv", timeout=BALANCER_STATS_TIMEOUT) as answer:  # noqa: S310
            text = answer.read().decode(errors="replace")
    except (OSError, ValueError):
        return None
    rows = csv.DictReader(line.removeprefix("# ") for line in text.splitlines())
    return [row.get("status") or "" for row in rows
            if (row.get("pxname") or "").startswith(prefix) and row.get("svname") == name]
