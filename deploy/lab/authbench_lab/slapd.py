"""The lab's OpenLDAP server: its own slapd.conf, an offline seed with slapadd, and a bind probe.

Users are loaded with `slapadd -q` before slapd starts, which is far faster than adding them over
LDAP and lets `--users 100000` seed in seconds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ldap

from . import config as cfg
from . import pki

MODULE_PATH = "/usr/lib/ldap"
SCHEMA_DIR = Path("/etc/ldap/schema")
SCHEMAS = ("core", "cosine", "inetorgperson")
MDB_MAX_SIZE = 1 << 30  # 1 GiB map; the file stays sparse, 100k users need ~100 MB
SECRET_BYTES = 16  # random passwords: 32 hex characters
SALT_BYTES = 8
SLAPADD_TIMEOUT = 300.0  # seconds; 100k users take a fraction of that
DEBUG_LEVEL = "none"  # with -d slapd stays in the foreground; "none" keeps only errors and start/stop
PROBE_TIMEOUT = 2.0
TOOL_THREADS = max(1, min(4, os.cpu_count() or 1))  # slapadd indexes in parallel: 100k users 6.9 → 4.5 s


@dataclass(frozen=True)
class Paths:
    """Where the LDAP server keeps its files inside the run directory."""

    root: Path

    @property
    def conf(self) -> Path:
        return self.root / "slapd.conf"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def admin_password(self) -> Path:
        return self.root / "admin.password"

    @property
    def idp_password(self) -> Path:
        return self.root / "idp.password"

    @property
    def seed_marker(self) -> Path:
        return self.root / "seed.json"

    @property
    def seed_ldif(self) -> Path:
        return self.root / "seed.ldif"

    @property
    def pid_file(self) -> Path:
        return self.root / "slapd.pid"


def paths(config: cfg.LabConfig) -> Paths:
    return Paths(config.component_dir("ldap"))


def ssha(password: str, salt: bytes | None = None) -> str:
    """{SSHA} userPassword value (salted SHA-1), the scheme slapd verifies by default."""
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def render_conf(config: cfg.LabConfig, files: Paths, tls: tuple[Path, Path, Path]) -> str:
    cert, key, ca = tls
    schemas = "\n".join(f"include {SCHEMA_DIR / name}.schema" for name in SCHEMAS)
    return f"""# authbench lab slapd configuration (generated; edits are overwritten by `lab up`)
{schemas}
modulepath {MODULE_PATH}
moduleload back_mdb
pidfile {files.pid_file}
argsfile {files.root / "slapd.args"}
loglevel none
tool-threads {TOOL_THREADS}

TLSCertificateFile {cert}
TLSCertificateKeyFile {key}
TLSCACertificateFile {ca}

access to dn.base="" by * read
access to dn.base="cn=Subschema" by * read

database mdb
suffix "{cfg.LDAP_SUFFIX}"
rootdn "{cfg.LDAP_ADMIN_DN}"
rootpw {ssha(pki.read_secret(files.admin_password))}
directory {files.data}
maxsize {MDB_MAX_SIZE}
index objectClass eq
index uid eq

# Passwords are only ever compared by a bind: nobody reads them, their owner may change them.
access to attrs=userPassword
    by self write
    by anonymous auth
    by * none
access to dn.subtree="{cfg.LDAP_PEOPLE}"
    by dn.exact="{cfg.LDAP_IDP_DN}" read
    by * none
access to *
    by * none
"""


def _entry(dn: str, attrs: list[tuple[str, str]]) -> str:
    return "\n".join([f"dn: {dn}", *(f"{name}: {value}" for name, value in attrs)]) + "\n\n"


def seed_entries(users: int, idp_password: str) -> Iterator[str]:
    """LDIF entries: the base, the service account and `users` people with documented passwords."""
    domain = cfg.LDAP_SUFFIX.split(",")[0].split("=")[1]
    yield _entry(
        cfg.LDAP_SUFFIX,
        [("objectClass", "top"), ("objectClass", "dcObject"), ("objectClass", "organization"),
         ("dc", domain), ("o", "authbench lab")],
    )
    for ou in (cfg.LDAP_PEOPLE, f"ou=services,{cfg.LDAP_SUFFIX}"):
        name = ou.split(",")[0].split("=")[1]
        yield _entry(ou, [("objectClass", "organizationalUnit"), ("ou", name)])
    yield _entry(
        cfg.LDAP_IDP_DN,
        [("objectClass", "applicationProcess"), ("objectClass", "simpleSecurityObject"), ("cn", "idp"),
         ("description", "lab IdP service account"), ("userPassword", ssha(idp_password))],
    )
    for index in range(users):
        uid = cfg.username(index, users)
        yield _entry(
            f"uid={uid},{cfg.LDAP_PEOPLE}",
            [("objectClass", "inetOrgPerson"), ("uid", uid), ("cn", f"User {index}"), ("sn", str(index)),
             ("givenName", "User"), ("displayName", f"User {index}"), ("mail", f"{uid}@{cfg.SCOPE_DOMAIN}"),
             ("userPassword", ssha(cfg.password_for(uid)))],
        )


def prepare(config: cfg.LabConfig) -> Paths:
    """Secrets and slapd.conf (0600: it holds the hashed root password)."""
    files = paths(config)
    files.root.mkdir(parents=True, exist_ok=True)
    pki.ensure_secret(files.admin_password, SECRET_BYTES)
    pki.ensure_secret(files.idp_password, SECRET_BYTES)
    cert, key, _pem = pki.ensure_server_cert(config.pki_dir)
    text = render_conf(config, files, (cert, key, config.ca_cert))
    fd = os.open(files.conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return files


def seed_info(files: Paths) -> dict | None:
    """{"users", "seconds"} of the existing database, or None when it has to be built."""
    if not (files.data / "data.mdb").exists():
        return None
    try:
        info = json.loads(files.seed_marker.read_text())
        return {"users": int(info["users"]), "seconds": float(info["seconds"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def seed(files: Paths, slapadd: str, users: int) -> dict:
    """Rebuild the database offline (slapd must not be running); returns users and seconds taken."""
    began = time.perf_counter()
    shutil.rmtree(files.data, ignore_errors=True)
    files.data.mkdir(mode=0o700, parents=True)
    files.seed_marker.unlink(missing_ok=True)
    idp_password = pki.read_secret(files.idp_password)
    fd = os.open(files.seed_ldif, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # holds password hashes
    with os.fdopen(fd, "w") as handle:
        handle.writelines(seed_entries(users, idp_password))
    try:
        result = subprocess.run(
            [slapadd, "-q", "-f", str(files.conf), "-l", str(files.seed_ldif)],
            capture_output=True, text=True, timeout=SLAPADD_TIMEOUT, check=False,
        )
    finally:
        files.seed_ldif.unlink(missing_ok=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"slapadd failed (exit {result.returncode}): {last}")
    info = {"users": users, "seconds": round(time.perf_counter() - began, 3)}
    files.seed_marker.write_text(json.dumps(info))
    return info


def command(config: cfg.LabConfig, files: Paths, slapd: str) -> list[str]:
    urls = f"{config.ldap_url()}/ {config.ldaps_url()}/"
    return [slapd, "-d", DEBUG_LEVEL, "-f", str(files.conf), "-h", urls]


def bind_probe(config: cfg.LabConfig):
    """Health = the IdP's service account can bind, i.e. slapd is up and the seed is in place."""
    url, password_file = config.ldap_url(), paths(config).idp_password

    def probe() -> str:
        conn = ldap.initialize(url)
        conn.set_option(ldap.OPT_NETWORK_TIMEOUT, PROBE_TIMEOUT)
        conn.set_option(ldap.OPT_TIMEOUT, PROBE_TIMEOUT)
        try:
            conn.simple_bind_s(cfg.LDAP_IDP_DN, pki.read_secret(password_file))
        except ldap.LDAPError as exc:
            info = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
            raise ConnectionError(info.get("desc", type(exc).__name__)) from None
        finally:
            conn.unbind_s()
        return "service account bind ok"

    return probe
