"""Keys and certificates of the lab, made on the first `lab up` and kept afterwards.

A lab CA signs one TLS server certificate (127.0.0.1, ::1, localhost and the --public-host, if any) used
by HAProxy and slapd, so clients verify TLS against `pki/ca.crt` instead of switching verification off.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEY_BITS = 2048
VALIDITY_DAYS = 3650
SEALER_KEY_BYTES = 32  # AES-256-GCM


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _builder(subject: str, issuer: x509.Name | None, public_key) -> x509.CertificateBuilder:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALIDITY_DAYS))
    )


def ensure_ca(pki_dir: Path) -> tuple[Path, Path]:
    cert_path, key_path = pki_dir / "ca.crt", pki_dir / "ca.key"
    if not cert_path.exists() or not key_path.exists():
        key = _new_key()
        cert = (
            _builder("authbench lab CA", None, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                    encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        _write_private(key_path, _key_pem(key))
        cert_path.write_bytes(_cert_pem(cert))
    return cert_path, key_path


def _san_entry(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _covers(cert_path: Path, names: Sequence[str]) -> bool:
    """Whether the certificate already names every one of `names` (a new --public-host needs a new one)."""
    if not names:
        return True
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return all(_san_entry(name) in san for name in names)


def ensure_server_cert(pki_dir: Path, names: Sequence[str] = ()) -> tuple[Path, Path, Path]:
    """TLS certificate for the loopback names and `names`; returns (cert, key, combined PEM for HAProxy)."""
    ca_cert_path, ca_key_path = ensure_ca(pki_dir)
    cert_path, key_path, pem_path = pki_dir / "server.crt", pki_dir / "server.key", pki_dir / "server.pem"
    if not (cert_path.exists() and key_path.exists() and pem_path.exists() and _covers(cert_path, names)):
        ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        key = _new_key()
        loopback = ["localhost", "127.0.0.1", "::1"]
        san = x509.SubjectAlternativeName([_san_entry(name) for name in dict.fromkeys([*loopback, *names])])
        cert = (
            _builder("authbench lab", ca_cert.subject, key.public_key())
            .add_extension(san, critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        _write_private(key_path, _key_pem(key))
        cert_path.write_bytes(_cert_pem(cert) + _cert_pem(ca_cert))
        _write_private(pem_path, _cert_pem(cert) + _cert_pem(ca_cert) + _key_pem(key))
    return cert_path, key_path, pem_path


def ensure_signing_pair(directory: Path, subject: str) -> tuple[Path, Path]:
    """Self-signed SAML signing certificate, as Shibboleth's install script makes one."""
    cert_path, key_path = directory / "signing.crt", directory / "signing.key"
    if not cert_path.exists() or not key_path.exists():
        key = _new_key()
        cert = _builder(subject, None, key.public_key()).sign(key, hashes.SHA256())
        _write_private(key_path, _key_pem(key))
        cert_path.write_bytes(_cert_pem(cert))
    return cert_path, key_path


def ensure_secret(path: Path, size: int = SEALER_KEY_BYTES) -> Path:
    """A random key or password kept in a 0600 file (never logged, never in a report)."""
    if not path.exists():
        _write_private(path, os.urandom(size).hex().encode())
    return path


def read_secret(path: str | Path) -> str:
    return Path(path).read_text().strip()
