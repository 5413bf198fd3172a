"""What does signing in-process save over pysaml2's default? signxml vs pysaml2's xmlsec1 backend.

pysaml2's default crypto backend (`CryptoBackendXmlSec1`) writes the document to a temporary file and
runs the xmlsec1 binary for every signature and every verification. The lab signs with signxml inside
the IdP process instead. This measures both on the same SAML Response, interleaved in rounds so that
machine noise hits every method alike, and prints a Markdown table for docs/benchmarks.md.

    .venv/bin/python bench/signing.py [--iterations 200] [--warmup 10]

Before timing anything it cross-checks the two implementations: a signature made by either one must
verify with the other, and a tampered document must be refused by both.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import logging
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from cryptography.hazmat.backends.openssl import backend as openssl_backend
from lxml import etree
from saml2 import class_name, samlp, sigver
from saml2.sigver import CryptoBackendXmlSec1, SecurityContext, pre_signature_part
from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256

from authbench_lab.idp.response import Authentication, build_response
from authbench_lab.pki import ensure_signing_pair
from authbench_lab.saml.signing import PLACEHOLDER, SignatureError, Signer, Verifier
from authbench_lab.saml.xml import cert_body

ITERATIONS = 200  # timed operations per method; ~40 s on an idle 2-core VM, nearly all xmlsec1 runs
WARMUP = 10  # untimed operations per method first (imports, caches, page cache for xmlsec1)
XMLSEC1 = "/usr/bin/xmlsec1"
NO_CA_BUNDLE = {"SSL_CERT_FILE": os.devnull, "SSL_CERT_DIR": os.devnull}  # OpenSSL's trust-store overrides

ISSUER = "https://idp.test/idp/shibboleth"
AUDIENCE = "https://sp.test/shibboleth"
ACS_URL = "https://sp.test/Shibboleth.sso/SAML2/POST"
IN_RESPONSE_TO = "_bench_request"
SCOPE = "example.org"
USER = "user001"
ATTRIBUTES = {  # every attribute the lab releases, so the Response has a realistic size
    "uid": USER,
    "mail": f"{USER}@{SCOPE}",
    "displayName": "User Zero Zero One",
    "givenName": "User",
    "sn": "Zero Zero One",
}
RESPONSE_NODE = class_name(samlp.Response())  # what xmlsec1's --id-attr:ID and --node-id refer to


class _Capture:
    """Stands in for a Signer so that build_response hands back the unsigned document."""

    document: bytes = b""
    reference_id: str = ""

    def sign(self, document: bytes, reference_id: str) -> bytes:
        self.document, self.reference_id = document, reference_id
        return document


@dataclass
class Method:
    """One way of doing one operation, with what each timed call cost."""

    operation: str
    name: str
    call: Callable[[], object]
    wall_ns: list[int] = field(default_factory=list)
    cpu_self_s: float = 0.0
    cpu_children_s: float = 0.0
    subprocesses: list[str] = field(default_factory=list)

    def run_timed(self) -> None:
        self_before = resource.getrusage(resource.RUSAGE_SELF)
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter_ns()
        self.call()
        elapsed = time.perf_counter_ns() - start
        self_after = resource.getrusage(resource.RUSAGE_SELF)
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.wall_ns.append(elapsed)
        self.cpu_self_s += _cpu(self_after) - _cpu(self_before)
        self.cpu_children_s += _cpu(children_after) - _cpu(children_before)


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def _percentile(values: list[int], fraction: float) -> float:
    """Nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _bare_xmlsec1() -> None:
    """The floor under every xmlsec1 run: start the binary the way pysaml2 does, doing no XML work."""
    process = subprocess.Popen([XMLSEC1, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.communicate()


@contextlib.contextmanager
def _without_ca_bundle() -> Iterator[None]:
    """Point OpenSSL's default trust store at nothing, for the xmlsec1 runs started meanwhile.

    xmlsec1 loads the system CA bundle into its X.509 store on every start although pysaml2 hands it
    the one certificate to use; this variant shows how much of each run that costs.
    """
    saved = {name: os.environ.get(name) for name in NO_CA_BUNDLE}
    os.environ.update(NO_CA_BUNDLE)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _xmlsec1_runs(call: Callable[[], object]) -> list[str]:
    """The xmlsec1 commands pysaml2 starts for one call (its first argument, e.g. --sign)."""
    started: list[str] = []
    original = sigver.Popen

    def counting(args, *rest, **kwargs):
        started.append(args[1] if len(args) > 1 else args[0])
        return original(args, *rest, **kwargs)

    sigver.Popen = counting
    try:
        call()
    finally:
        sigver.Popen = original
    return started


def _unsigned_response() -> tuple[bytes, str]:
    capture = _Capture()
    authentication = Authentication(USER, ATTRIBUTES, time.time(), "_bench_session")
    build_response(capture, issuer=ISSUER, audience=AUDIENCE, acs_url=ACS_URL,  # type: ignore[arg-type]
                   in_response_to=IN_RESPONSE_TO, authentication=authentication, scope=SCOPE)
    return capture.document, capture.reference_id


def _tampered(signed: bytes) -> bytes:
    original, forged_value = f">{USER}@{SCOPE}<".encode(), f">admin@{SCOPE}<".encode()
    forged = signed.replace(original, forged_value)
    assert forged != signed, "the tamper target is not in the document"
    return forged


def _pysaml2_refuses(verify: Callable[[bytes], object], document: bytes) -> bool:
    saml2_logger = logging.getLogger("saml2")
    level = saml2_logger.level
    saml2_logger.setLevel(logging.CRITICAL)  # pysaml2 logs xmlsec1's failure output at ERROR
    try:
        verify(document)
    except sigver.SignatureError:
        return True
    finally:
        saml2_logger.setLevel(level)
    return False


def _ours_refuses(verifier: Verifier, document: bytes) -> bool:
    try:
        verifier.verify(document)
    except SignatureError:
        return True
    return False


def _ca_bundle_size() -> str:
    """How many certificates OpenSSL's default CA file holds, the one xmlsec1 loads at start."""
    import ssl

    path = Path(ssl.get_default_verify_paths().openssl_cafile)
    if not path.is_file():
        return f"{path} missing"
    return f"{path}, {path.read_text(errors='replace').count('BEGIN CERTIFICATE')} certificates"


def _machine() -> list[str]:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    usable = len(os.sched_getaffinity(0))
    xmlsec1 = subprocess.run([XMLSEC1, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    libxml2 = ".".join(str(part) for part in etree.LIBXML_VERSION)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [
        f"- Date: {now}",
        f"- Machine: {model}, {os.cpu_count()} cores ({usable} usable), Linux {platform.release()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()})",
        f"- In-process: signxml {version('signxml')} (lxml {version('lxml')}, libxml2 {libxml2}, "
        f"cryptography {version('cryptography')}, {openssl_backend.openssl_version_text()})",
        f"- Subprocess: pysaml2 {version('pysaml2')} with `CryptoBackendXmlSec1` → {xmlsec1}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help="timed operations per method")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="untimed operations per method first")
    args = parser.parse_args(argv)
    if not Path(XMLSEC1).exists():
        print(f"{XMLSEC1} is missing (make setup installs it)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="authbench-signing-") as directory:
        cert_path, key_path = ensure_signing_pair(Path(directory), "idp.test")
        signer, verifier = Signer(key_path, cert_path), Verifier(cert_path)
        security = SecurityContext(CryptoBackendXmlSec1(XMLSEC1), key_file=str(key_path), cert_file=str(cert_path))
        key_info_cert = cert_body(cert_path.read_text())
        unsigned, reference_id = _unsigned_response()

        def sign_ours() -> bytes:
            return signer.sign(unsigned, reference_id)

        def sign_pysaml2() -> bytes:
            # What pysaml2's Entity.sign does: preset the Signature template, then xmlsec1 --sign.
            template = pre_signature_part(ident=reference_id, public_key=key_info_cert,
                                          sign_alg=SIG_RSA_SHA256, digest_alg=DIGEST_SHA256)
            document = unsigned.replace(PLACEHOLDER.encode(), str(template).encode())
            signed = security.sign_statement(document.decode(), RESPONSE_NODE, node_id=reference_id)
            return signed.encode()

        def verify_pysaml2(document: bytes) -> bool:
            return security.verify_signature(document, cert_file=str(cert_path), cert_type="pem",
                                             node_name=RESPONSE_NODE, node_id=reference_id)

        def sign_pysaml2_no_ca() -> bytes:
            with _without_ca_bundle():
                return sign_pysaml2()

        def verify_pysaml2_no_ca(document: bytes) -> bool:
            with _without_ca_bundle():
                return verify_pysaml2(document)

        ours_signed = sign_ours()
        # Cross-check: each tool accepts the other's signature and both refuse a tampered document.
        assert verify_pysaml2(ours_signed), "xmlsec1 (via pysaml2) rejects signxml's signature"
        assert verify_pysaml2_no_ca(ours_signed), "xmlsec1 without a CA bundle rejects signxml's signature"
        for pysaml2_signed in (sign_pysaml2(), sign_pysaml2_no_ca()):
            assert verifier.verify(pysaml2_signed) is not None, "signxml rejects xmlsec1's signature"
            assert verify_pysaml2(pysaml2_signed), "xmlsec1 rejects its own signature"
        for signed in (ours_signed, pysaml2_signed):
            assert _ours_refuses(verifier, _tampered(signed)), "signxml accepts a tampered document"
            for verify in (verify_pysaml2, verify_pysaml2_no_ca):
                assert _pysaml2_refuses(verify, _tampered(signed)), "xmlsec1 accepts a tampered document"

        methods = [
            Method("sign", "signxml, in-process", sign_ours),
            Method("sign", "pysaml2 → xmlsec1 (default)", sign_pysaml2),
            Method("sign", "pysaml2 → xmlsec1, no system CA bundle¹", sign_pysaml2_no_ca),
            Method("verify", "signxml, in-process", lambda: verifier.verify(ours_signed)),
            Method("verify", "pysaml2 → xmlsec1 (default)", lambda: verify_pysaml2(ours_signed)),
            Method("verify", "pysaml2 → xmlsec1, no system CA bundle¹", lambda: verify_pysaml2_no_ca(ours_signed)),
            Method("reference", "bare xmlsec1 start, no XML work", _bare_xmlsec1),
        ]
        for method in methods:
            method.subprocesses = _xmlsec1_runs(method.call)
            for _ in range(args.warmup):
                method.call()

        load_before = os.getloadavg()[0]
        started = time.monotonic()
        for round_number in range(args.iterations):
            shift = round_number % len(methods)  # rotate the order so no method always runs first
            for method in methods[shift:] + methods[:shift]:
                method.run_timed()
        duration = time.monotonic() - started
        machine = _machine()

    print("## XML signatures: in-process signxml vs pysaml2's xmlsec1 backend\n")
    print("\n".join(machine))
    print(f"- Document: SAML Response with {len(ATTRIBUTES) + 1} attributes, {len(unsigned):,} bytes unsigned, "
          f"{len(ours_signed):,} bytes signed; RSA-2048, RSA-SHA256, SHA-256 digest, exclusive c14n")
    print(f"- {args.iterations} timed operations per method after {args.warmup} warm-up, interleaved in rotating "
          f"rounds; timed part took {duration:.1f} s; 1-minute load average {load_before:.2f} before it")
    print("- Cross-check passed: each tool verifies the other's signature; both refuse a tampered document\n")
    print("| Operation | Method | xmlsec1 runs/op | median ms | p90 ms | CPU ms/op (self + children) "
          "| median vs in-process |")
    print("|---|---|---|---:|---:|---:|---:|")
    baseline: dict[str, float] = {}
    for method in methods:
        count = len(method.wall_ns)
        median = statistics.median(method.wall_ns) / 1e6
        baseline.setdefault(method.operation, median)
        cpu_self, cpu_children = method.cpu_self_s * 1e3 / count, method.cpu_children_s * 1e3 / count
        runs = ", ".join(f"`{run}`" for run in method.subprocesses) or "none"
        if method.operation == "reference":
            runs = f"`{XMLSEC1} --version`"
        ratio = "—" if method.operation == "reference" else f"{median / baseline[method.operation]:.1f}×"
        print(f"| {method.operation} | {method.name} | {runs} | {median:.2f} | "
              f"{_percentile(method.wall_ns, 0.9) / 1e6:.2f} | {cpu_self + cpu_children:.2f} "
              f"({cpu_self:.2f} + {cpu_children:.2f}) | {ratio} |")
    print(f"\n¹ Same pysaml2 call with {' and '.join(f'{name}={value}' for name, value in NO_CA_BUNDLE.items())} "
          f"in the environment: xmlsec1 otherwise parses the system CA bundle ({_ca_bundle_size()}) on every "
          "start, which pysaml2's calls do not need (the key comes from `--privkey-pem` or `--pubkey-cert-pem`). "
          "pysaml2 has no option for this; the environment of the process decides.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
