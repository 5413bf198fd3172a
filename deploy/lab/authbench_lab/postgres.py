"""PostgreSQL in the lab: database logins authenticated by a simple bind against the lab's slapd.

Debian's server binaries, a data directory of its own under the run directory, TCP on loopback only (no
Unix socket), and a `pg_hba.conf` whose one `host` line sends every login to LDAP with a DN prefix and
suffix, as Percona's `authentication_ldap_simple` does for MySQL. Every seeded LDAP user gets a login
role of the same name (LDAP checks the password, PostgreSQL still needs the role); the roles are made
in single-user mode before the server starts, so no superuser password exists anywhere.

PostgreSQL refuses to run as root: as root the lab starts it in a user namespace where it is an
ordinary user (`unshare --map-user`); the files stay root's outside, so no directory needs opening up.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import config as cfg
from .checks import ALL_ADDRESSES

COMPONENT = "postgres"
BIN_GLOB = "/usr/lib/postgresql/*/bin"  # Debian keeps the server binaries out of PATH, one folder per version
BINARIES = ("postgres", "initdb")
SUPERUSER = "authbench"  # initdb's bootstrap role; it has no password and no hba line lets it in over TCP
DATABASE = "postgres"
MAX_CONNECTIONS = 200  # 64 concurrent clients of the Percona-style sweep, with room for the churn
UNPRIVILEGED_USER = "postgres"  # whose ids PostgreSQL takes inside the namespace (Debian's package makes it)
NOBODY_ID = 65534
INITDB_TIMEOUT = 120.0
ROLES_TIMEOUT = 300.0
PROTOCOL_V3 = 196608
AUTH_OK, AUTH_CLEARTEXT = 0, 3
SETUP_HINT = "apt-get install postgresql (or 'make setup' as root)"
SERVICE_DATABASES = ("keycloak",)  # lab servers with a database (and a role of that name) of their own


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def hba(self) -> Path:
        return self.root / "pg_hba.conf"

    @property
    def roles_marker(self) -> Path:
        return self.root / "roles.seeded"


def paths(config: cfg.LabConfig) -> Paths:
    return Paths(config.component_dir(COMPONENT))


def find_binaries(search: str = BIN_GLOB) -> dict[str, str]:
    """postgres and initdb of the newest installed major version; RuntimeError naming what to install."""
    for folder in sorted(glob.glob(search), key=_major, reverse=True):
        found = {name: shutil.which(name, path=folder) for name in BINARIES}
        if all(found.values()):
            return {f"pg-{name}": str(where) for name, where in found.items()}
    raise RuntimeError(f"PostgreSQL server binaries not found under {search}; {SETUP_HINT}")


def _major(folder: str) -> int:
    version = Path(folder).parent.name
    return int(version) if version.isdigit() else 0


def _as_unprivileged() -> list[str]:
    """The prefix that makes PostgreSQL an ordinary user when the lab runs as root; empty otherwise."""
    if os.geteuid() != 0:
        return []
    try:
        ids = pwd.getpwnam(UNPRIVILEGED_USER)
        uid, gid = ids.pw_uid, ids.pw_gid
    except KeyError:
        uid = gid = NOBODY_ID
    return ["unshare", "--user", f"--map-user={uid}", f"--map-group={gid}"]


def clients(config: cfg.LabConfig) -> str:
    """Where logins may come from: loopback, or in a container listening on every address (compose) the networks
    it is on (`samenet`: the internal network, and loopback for its own health probe)."""
    return "samenet" if config.host == ALL_ADDRESSES else "127.0.0.1/32"


def hba_text(config: cfg.LabConfig) -> str:
    """Every TCP login from `clients` is an LDAP simple bind as uid=<role>,ou=people,…; nothing else gets in."""
    ldap = (f'ldap ldapserver={config.address("ldap")} ldapport={config.shared_port("ldap")} '
            f'ldapprefix="uid=" ldapsuffix=",{cfg.LDAP_PEOPLE}"')
    source = clients(config)
    services = "".join(f"host    {name}  {name}  {source}  scram-sha-256\n"
                       for name in SERVICE_DATABASES if name in config.extras)
    return ("# written by authbench lab: database logins are checked by the lab's slapd\n"
            "# (a service of the lab, such as Keycloak, has a database and a password of its own)\n"
            "# TYPE  DATABASE  USER  ADDRESS       METHOD\n"
            f"{services}host    all       all   {source}  {ldap}\n")


def prepare(config: cfg.LabConfig, binaries: dict[str, str]) -> Paths:
    """initdb once (kept across `lab up`s), pg_hba.conf every time (the LDAP port moves with the plan),
    and a login role per seeded user whenever the number of users changed."""
    files = paths(config)
    files.root.mkdir(parents=True, exist_ok=True)
    if not (files.data / "PG_VERSION").is_file():
        shutil.rmtree(files.data, ignore_errors=True)
        _run([*_as_unprivileged(), binaries["pg-initdb"], "-D", str(files.data), "-U", SUPERUSER,
              "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"], files, "initdb", INITDB_TIMEOUT)
        files.roles_marker.unlink(missing_ok=True)
    files.hba.write_text(hba_text(config))
    wanted = str(config.users)
    if not files.roles_marker.is_file() or files.roles_marker.read_text() != wanted:
        statements = "".join(f'CREATE ROLE "{cfg.username(i, config.users)}" LOGIN;\n' for i in range(config.users))
        script = _drop_users() + statements
        _run([*_as_unprivileged(), binaries["pg-postgres"], "--single", "-D", str(files.data),
              "-c", "log_min_messages=error", DATABASE], files, "creating login roles", ROLES_TIMEOUT, script)
        files.roles_marker.write_text(wanted)
    return files


def service_database(config: cfg.LabConfig, binaries: dict[str, str], name: str, password: str,
                     version: str) -> bool:
    """A database owned by a role `name` that logs in with `password` (scram), made afresh whenever `version`
    changes (the service's setup changed: its old data would be stale); True when it was made now."""
    if not (name.isidentifier() and password.isalnum()):
        raise RuntimeError(f"service database {name!r}: name and password must be plain words")
    files = paths(config)
    marker = files.root / f"{name}.database"
    if marker.is_file() and marker.read_text() == version:
        return False
    script = (f"DROP DATABASE IF EXISTS {name};\n"
              f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{name}') THEN "
              f"CREATE ROLE {name} LOGIN; END IF; END $$;\n"
              f"ALTER ROLE {name} PASSWORD '{password}';\n"
              f"CREATE DATABASE {name} OWNER {name};\n")
    _run([*_as_unprivileged(), binaries["pg-postgres"], "--single", "-D", str(files.data),
          "-c", "log_min_messages=error", DATABASE], files, f"creating the {name} database", ROLES_TIMEOUT, script)
    marker.write_text(version)
    return True


def _drop_users() -> str:
    """Single-user mode takes one statement per line: this one drops every earlier user role in one go."""
    return ("DO $$ DECLARE r text; BEGIN FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'user%' "
            "LOOP EXECUTE format('DROP ROLE %I', r); END LOOP; END $$;\n")


def _run(command: list[str], files: Paths, what: str, timeout: float, stdin: str = "") -> None:
    """Run a setup step; its output goes to setup.log, and an ERROR in it (single-user mode exits 0) fails."""
    log = files.root / "setup.log"
    try:
        done = subprocess.run(command, input=stdin.encode(), capture_output=True, cwd=files.root, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"PostgreSQL {what} took over {timeout:g} s; log: {log}") from None
    output = done.stdout + done.stderr
    with open(log, "ab") as out:
        out.write(f"=== {what}\n".encode() + output)
    if done.returncode != 0 or b"ERROR:" in output:
        raise RuntimeError(f"PostgreSQL {what} failed (exit {done.returncode}); log: {log}")


def command(config: cfg.LabConfig, binaries: dict[str, str]) -> list[str]:
    files = paths(config)
    settings = {"listen_addresses": config.host, "port": str(config.extra_port(COMPONENT)),
                "unix_socket_directories": "", "hba_file": str(files.hba), "max_connections": str(MAX_CONNECTIONS),
                "fsync": "off", "log_min_messages": "warning"}
    options = [part for name, value in settings.items() for part in ("-c", f"{name}={value}")]
    return [*_as_unprivileged(), binaries["pg-postgres"], "-D", str(files.data), *options]


def fragment(config: cfg.LabConfig) -> str:
    return f"-D {paths(config).data} "


def startup_probe(config: cfg.LabConfig, timeout: float = 2.0):
    """Health = the server asks a login for its password (it has started up and reads pg_hba.conf).

    The probe sends a startup message and hangs up at the password question, so it never binds to LDAP.
    """
    host, port = config.host, config.extra_port(COMPONENT)

    def probe() -> str:
        body = struct.pack("!i", PROTOCOL_V3) + b"user\0" + cfg.username(0, config.users).encode() + b"\0database\0" \
            + DATABASE.encode() + b"\0\0"
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(struct.pack("!i", len(body) + 4) + body)
            kind = sock.recv(1)
            payload = sock.recv(4096)
        if kind == b"R" and len(payload) >= 8 and struct.unpack("!i", payload[4:8])[0] == AUTH_CLEARTEXT:
            return "asks for the LDAP password"
        if kind == b"E":
            message = next((part[1:] for part in payload[4:].split(b"\0") if part[:1] == b"M"), b"error")
            raise ConnectionError(message.decode(errors="replace"))
        raise ConnectionError(f"unexpected answer {kind!r} to a startup message")

    return probe
