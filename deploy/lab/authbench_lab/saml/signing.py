"""XML signatures in-process (signxml over lxml and cryptography): no xmlsec1 subprocess per message.

RSA-SHA256 with exclusive canonicalisation, the algorithms Shibboleth IdP uses by default. The
signature goes where SAML's schema wants it — right after the Issuer — via a placeholder element.
"""

from __future__ import annotations

from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from lxml import etree
from signxml import (
    DigestAlgorithm,
    SignatureConfiguration,
    SignatureMethod,
    XMLSigner,
    XMLVerifier,
)
from signxml.exceptions import SignXMLException

EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#"
PLACEHOLDER = '<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#" Id="placeholder"></ds:Signature>'

_EXPECT = SignatureConfiguration(
    signature_methods=frozenset([SignatureMethod.RSA_SHA256]),
    digest_algorithms=frozenset([DigestAlgorithm.SHA256]),
    expect_references=1,
)


class SignatureError(ValueError):
    """The document is unsigned, tampered with, or signed by someone else."""


class Signer:
    def __init__(self, key_path: str | Path, cert_path: str | Path) -> None:
        self._key = serialization.load_pem_private_key(Path(key_path).read_bytes(), password=None)
        self._cert = [x509.load_pem_x509_certificate(Path(cert_path).read_bytes())]
        self._signer = XMLSigner(c14n_algorithm=EXC_C14N)

    def sign(self, document: bytes, reference_id: str) -> bytes:
        """Sign the element whose ID is `reference_id`; the document must contain PLACEHOLDER."""
        root = etree.fromstring(document)
        signed = self._signer.sign(root, key=self._key, cert=self._cert, reference_uri=reference_id,
                                   id_attribute="ID")
        return etree.tostring(signed)


class Verifier:
    def __init__(self, cert_path: str | Path) -> None:
        self._cert = x509.load_pem_x509_certificate(Path(cert_path).read_bytes())
        self._verifier = XMLVerifier()

    def verify(self, document: bytes) -> etree._Element:
        """The element the signature covers — callers must read only from it (no wrapping attacks)."""
        try:
            result = self._verifier.verify(document, x509_cert=self._cert, id_attribute="ID",
                                           expect_config=_EXPECT)
        except (SignXMLException, etree.XMLSyntaxError) as exc:
            raise SignatureError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
        return result.signed_xml
