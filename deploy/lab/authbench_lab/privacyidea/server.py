"""privacyIDEA as a lab component: installed from PyPI into a venv of its own, served by gunicorn.

Its pins (requirements.txt beside this file) never touch authbench's environment. The venv is kept
(`AUTHBENCH_PRIVACYIDEA_VENV` may put it outside the run directory, as the tests do, so a second
session does not install again; one lab at a time installs it). The lab writes privacyIDEA's config
(SQLite database, encryption key, audit signing keys, log) and, for every seeded user, a SPASS, an HOTP
and a TOTP token whose secrets it generates and keeps in a file only the lab and the load generator read
(never printed).
The realm's LDAP resolver searches the lab's slapd as the IdPs' service account.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from .. import config as cfg
from .. import pki, processes, slapd

COMPONENT = "privacyidea"
VENV_ENV = "AUTHBENCH_PRIVACYIDEA_VENV"
HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
SEED_SCRIPT = HERE / "seed.py"
REALM = "lab"
RESOLVER = "lab-ldap"
WORKERS = 2
THREADS = 4
INSTALL_TIMEOUT = 900.0
SEED_TIMEOUT = 600.0
AUDIT_KEY_BITS = 2048
ENCKEY_BYTES = 96  # what privacyIDEA's create_enckey writes
OTP_KEY_BYTES = 20
OTP_DIGITS = 6
TOTP_STEP = 30
HEALTH_PATH = "/healthz/"
# privacyIDEA hashes token PINs with argon2 at 9 rounds by default: about 1 s of CPU per hash or check on
# this machine, and a check tries the PIN against each of the user's three tokens. The lab uses the cost
# of privacyIDEA's own test configuration, so enrolling and loading 1000 users stays practical; the
# production cost is one pi.cfg line away (docs/privacyidea.md).
PIN_HASH_PARAMS = {"argon2__rounds": 1, "argon2__memory_cost": 8, "argon2__parallelism": 1}
INSTALL_HINT = "pip could not install privacyIDEA into its own venv"


class PrivacyIdeaError(RuntimeError):
    pass


def root(config: cfg.LabConfig) -> Path:
    return config.component_dir(COMPONENT)


def venv_dir(config: cfg.LabConfig) -> Path:
    return Path(os.environ.get(VENV_ENV) or root(config) / "venv").resolve()


def tokens_file(config: cfg.LabConfig) -> Path:
    """user → {spass|hotp|totp: {serial, pin, key?, digits?, step?}}: the lab's secrets, mode 0600."""
    return root(config) / "tokens.json"


def pins_hash() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:16]


def ensure_venv(config: cfg.LabConfig) -> Path:
    """The venv with the pinned privacyIDEA; installed only when missing or its pins changed, by one lab at a time
    (two test workers or checkouts sharing a venv outside their run directories wait for each other)."""
    venv = venv_dir(config)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install_venv(config, venv)


def _install_venv(config: cfg.LabConfig, venv: Path) -> Path:
    stamp = venv / ".authbench-pins"
    if stamp.is_file() and stamp.read_text() == pins_hash() and (venv / "bin" / "gunicorn").is_file():
        return venv
    log = root(config) / "install.log"
    steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
             [str(venv / "bin" / "pip"), "install", "--disable-pip-version-check", "-q", "-r", str(REQUIREMENTS)]]
    for step in steps:
        with open(log, "ab") as out:
            try:
                done = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT, check=False)
            except subprocess.TimeoutExpired:
                raise PrivacyIdeaError(f"{INSTALL_HINT} within {INSTALL_TIMEOUT:g} s; log: {log}") from None
        if done.returncode != 0:
            raise PrivacyIdeaError(f"{INSTALL_HINT} (exit {done.returncode}); log: {log}")
    stamp.write_text(pins_hash())
    return venv


def config_file(config: cfg.LabConfig) -> Path:
    return root(config) / "pi.cfg"


def _write_private(path: Path, data: bytes) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)


def _rsa_pair_pem() -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=AUDIT_KEY_BITS)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


def write_config(config: cfg.LabConfig) -> Path:
    """pi.cfg and the keys it names; keys and the SQLite database are kept across `lab up`s."""
    folder = root(config)
    folder.mkdir(parents=True, exist_ok=True)
    enckey, audit_key, audit_pub = folder / "enckey", folder / "audit-private.pem", folder / "audit-public.pem"
    if not enckey.is_file():
        _write_private(enckey, secrets.token_bytes(ENCKEY_BYTES))
    if not audit_key.is_file():
        key_pem, pub_pem = _rsa_pair_pem()
        _write_private(audit_key, key_pem)
        audit_pub.write_bytes(pub_pem)
    secret_key = pki.read_secret(pki.ensure_secret(folder / "secret.key"))
    pepper = pki.read_secret(pki.ensure_secret(folder / "pepper.key"))
    settings = {
        "SQLALCHEMY_DATABASE_URI": f"sqlite:///{folder / 'privacyidea.sqlite'}",
        "SECRET_KEY": secret_key, "PI_PEPPER": pepper, "PI_ENCFILE": str(enckey),
        "PI_AUDIT_KEY_PRIVATE": str(audit_key), "PI_AUDIT_KEY_PUBLIC": str(audit_pub),
        "PI_AUDIT_SQL_TRUNCATE": True, "PI_LOGFILE": str(folder / "privacyidea.log"), "PI_LOGLEVEL": 30,
        "PI_NODE": "authbench-lab", "PI_HASH_ALGO_PARAMS": PIN_HASH_PARAMS, "SUPERUSER_REALM": ["superuser"],
    }
    path = config_file(config)
    _write_private(path, "".join(f"{name} = {value!r}\n" for name, value in settings.items()).encode())
    return path


def ensure_tokens(config: cfg.LabConfig) -> Path:
    """One SPASS, HOTP and TOTP per seeded user; existing secrets are kept, missing users added."""
    path = tokens_file(config)
    tokens = json.loads(path.read_text()) if path.is_file() else {}
    for index in range(config.users):
        user = cfg.username(index, config.users)
        if user in tokens:
            continue
        tokens[user] = {
            "spass": {"serial": f"PISP-{user}", "pin": secrets.token_urlsafe(12)},
            "hotp": {"serial": f"OATH-{user}", "pin": secrets.token_urlsafe(6), "key": secrets.token_hex(OTP_KEY_BYTES),
                     "digits": OTP_DIGITS},
            "totp": {"serial": f"TOTP-{user}", "pin": secrets.token_urlsafe(6), "key": secrets.token_hex(OTP_KEY_BYTES),
                     "digits": OTP_DIGITS, "step": TOTP_STEP},
        }
    _write_private(path, json.dumps(tokens).encode())
    return path


def prepare(config: cfg.LabConfig) -> Path:
    """Before anything starts: the venv, pi.cfg with its keys, and the token secrets; returns the venv."""
    venv = ensure_venv(config)
    write_config(config)
    ensure_tokens(config)
    return venv


def enrol(config: cfg.LabConfig) -> dict:
    """With slapd up: the resolver, realm, user-cache setting and tokens, in privacyIDEA's own Python."""
    spec = {"config_file": str(config_file(config)), "realm": REALM, "resolver": RESOLVER,
            # one switch for both of privacyIDEA's user caches: its database table and the LDAP resolver's own
            "cache_timeout": config.privacyidea_cache, "user_cache_seconds": config.privacyidea_cache,
            "tokens_file": str(tokens_file(config)),
            "ldap": {"uri": config.ldap_url(), "base": cfg.LDAP_PEOPLE, "bind_dn": cfg.LDAP_IDP_DN,
                     "bind_password_file": str(slapd.paths(config).idp_password)}}
    spec_path = root(config) / "seed.json"
    spec_path.write_text(json.dumps(spec))
    log = root(config) / "seed.log"
    try:
        done = subprocess.run([str(venv_dir(config) / "bin" / "python"), str(SEED_SCRIPT), str(spec_path)],
                              capture_output=True, timeout=SEED_TIMEOUT, check=False, cwd=root(config))
    except subprocess.TimeoutExpired:
        raise PrivacyIdeaError(f"privacyIDEA's token enrolment took over {SEED_TIMEOUT:g} s; log: {log}") from None
    log.write_bytes(done.stdout + done.stderr)
    if done.returncode != 0:
        raise PrivacyIdeaError(f"privacyIDEA's setup failed (exit {done.returncode}); log: {log}")
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def command(config: cfg.LabConfig) -> list[str]:
    port = config.extra_port(COMPONENT)
    return [str(venv_dir(config) / "bin" / "gunicorn"), "--bind", f"{config.host}:{port}", "--workers", str(WORKERS),
            "--threads", str(THREADS), "--worker-class", "gthread", "--preload", "--graceful-timeout", "3",
            "--no-control-socket", "--name", fragment(config),
            "privacyidea.app:create_app(config_name='production', silent=True)"]


def environment(config: cfg.LabConfig) -> dict[str, str]:
    return {"PRIVACYIDEA_CONFIGFILE": str(config_file(config))}


def fragment(config: cfg.LabConfig) -> str:
    return f"authbench-privacyidea-{config.extra_port(COMPONENT)}"


def probe(config: cfg.LabConfig) -> processes.Probe:
    return processes.http_probe(HEALTH_PATH, config.extra_port(COMPONENT))
