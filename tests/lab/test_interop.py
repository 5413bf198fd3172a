"""Interoperability: pysaml2, an independent SAML implementation, accepts what the lab IdP produces.

The lab signs and verifies with signxml, so its own tests cannot catch a mistake both halves share.
pysaml2's SP checks signatures with the xmlsec1 binary (libxmlsec1 over OpenSSL), validates Responses
against the SAML XSDs, and reads metadata with its own parser: a second opinion on every byte.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from lxml import etree
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.attribute_converter import ac_factory
from saml2.client import Saml2Client
from saml2.config import Config, SPConfig
from saml2.mdstore import MetadataStore
from saml2.response import AuthnResponse, UnsolicitedResponse
from saml2.saml import NAMEID_FORMAT_TRANSIENT
from saml2.sigver import SignatureError
from saml2.xml.schema import validate as validate_with_saml_schemas

from authbench_lab.idp.response import Authentication, build_response
from authbench_lab.pki import ensure_signing_pair
from authbench_lab.saml.metadata import idp_metadata, sp_metadata
from authbench_lab.saml.signing import Signer
from authbench_lab.saml.xml import NS, cert_body

XMLSEC1 = "/usr/bin/xmlsec1"
IDP = "https://idp.test/idp/shibboleth"
SSO_URL = "https://idp.test/idp/profile/SAML2/Redirect/SSO"
SP = "https://sp.test/shibboleth"
ACS = "https://sp.test/Shibboleth.sso/SAML2/POST"
REQUEST_ID = "_interop_request"
CAME_FROM = "/secure/"
SCOPE = "example.org"
USER = "user001"
MAIL = f"{USER}@{SCOPE}"
PASSWORD_PROTECTED = "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"

pytestmark = pytest.mark.skipif(
    not Path(XMLSEC1).exists(), reason=f"{XMLSEC1} is missing: pysaml2 verifies signatures with it (make setup)"
)


@dataclass(frozen=True)
class LabIdP:
    cert: Path
    signer: Signer
    stranger: Signer  # a well-formed IdP key that the SP's metadata does not vouch for
    metadata: Path


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> LabIdP:
    """The lab IdP's signing key and the IdP metadata file an SP would be given."""
    directory = tmp_path_factory.mktemp("interop")
    cert, key = ensure_signing_pair(directory, "idp.test")
    other_cert, other_key = ensure_signing_pair(directory / "other", "evil.test")
    metadata = directory / "idp-metadata.xml"
    metadata.write_bytes(idp_metadata(IDP, SSO_URL, cert.read_text(), SCOPE))
    return LabIdP(cert, Signer(key, cert), Signer(other_key, other_cert), metadata)


@pytest.fixture(scope="module")
def client(lab) -> Saml2Client:
    """A pysaml2 SP that trusts the lab IdP through its metadata and nothing else."""
    config = SPConfig()
    config.load({
        "entityid": SP,
        "xmlsec_binary": XMLSEC1,
        "metadata": {"local": [str(lab.metadata)]},
        "service": {"sp": {
            "endpoints": {"assertion_consumer_service": [(ACS, BINDING_HTTP_POST)]},
            "want_response_signed": True,
            "want_assertions_signed": False,  # the lab signs the Response only, as Shibboleth IdP does by default
            "allow_unsolicited": False,
        }},
    })
    return Saml2Client(config)


def _response(signer: Signer) -> bytes:
    authentication = Authentication(USER, {"mail": MAIL, "displayName": "User Zero Zero One"}, time.time(), "_s1")
    return build_response(signer, issuer=IDP, audience=SP, acs_url=ACS, in_response_to=REQUEST_ID,
                          authentication=authentication, scope=SCOPE)


def _post(client: Saml2Client, response: bytes, outstanding: dict[str, str] | None = None) -> AuthnResponse:
    """What the SP's ACS does with the SAMLResponse form field of an HTTP-POST."""
    outstanding = {REQUEST_ID: CAME_FROM} if outstanding is None else outstanding
    return client.parse_authn_request_response(base64.b64encode(response).decode(), BINDING_HTTP_POST,
                                               outstanding=outstanding)


def _edit(response: bytes, xpath: str, change: Callable[[etree._Element], None]) -> bytes:
    root = etree.fromstring(response)
    elements = root.xpath(xpath, namespaces=NS)
    assert elements, f"{xpath} is not in the response"
    for element in elements:
        change(element)
    return etree.tostring(root)


def _tamper_mail(lab: LabIdP) -> bytes:
    def change(element: etree._Element) -> None:
        element.text = "admin@example.org"

    return _edit(_response(lab.signer), "//saml:Attribute[@FriendlyName='mail']/saml:AttributeValue", change)


def _strip_signature(lab: LabIdP) -> bytes:
    def remove(element: etree._Element) -> None:
        element.getparent().remove(element)

    return _edit(_response(lab.signer), "/samlp:Response/ds:Signature", remove)


def _sign_as_stranger(lab: LabIdP) -> bytes:
    return _response(lab.stranger)


def test_pysaml2_sp_accepts_lab_response(lab, client):
    response = _response(lab.signer)
    name_id = etree.fromstring(response).findtext("saml:Assertion/saml:Subject/saml:NameID", namespaces=NS)

    parsed = _post(client, response)

    assert isinstance(parsed, AuthnResponse)
    assert parsed.came_from == CAME_FROM and parsed.issuer() == IDP
    assert parsed.name_id.text == name_id
    assert parsed.name_id.format == NAMEID_FORMAT_TRANSIENT and parsed.name_id.sp_name_qualifier == SP
    assert parsed.ava["eduPersonPrincipalName"] == [MAIL]
    assert parsed.ava["mail"] == [MAIL]
    assert parsed.ava["displayName"] == ["User Zero Zero One"]
    info = parsed.session_info()
    assert info["session_index"] == "_s1"
    assert info["authn_info"][0][0] == PASSWORD_PROTECTED


@pytest.mark.parametrize(
    ("forge", "message"),
    [
        (_tamper_mail, "Failed to verify signature"),
        (_strip_signature, "Signature missing for response"),
        (_sign_as_stranger, "Failed to verify signature"),
    ],
    ids=["attribute-tampered", "signature-stripped", "signed-by-key-not-in-metadata"],
)
def test_pysaml2_sp_refuses_forged_response(lab, client, forge, message):
    with pytest.raises(SignatureError, match=message):
        _post(client, forge(lab))


def test_pysaml2_sp_refuses_response_to_a_request_it_did_not_send(lab, client):
    with pytest.raises(UnsolicitedResponse):
        _post(client, _response(lab.signer), outstanding={"_some_other_request": CAME_FROM})


def _metadata_store(path: Path) -> MetadataStore:
    store = MetadataStore(ac_factory(), Config())
    store.load("local", str(path))
    return store


def test_pysaml2_reads_lab_idp_metadata(lab):
    document = lab.metadata.read_bytes()
    validate_with_saml_schemas(document.decode())
    store = _metadata_store(lab.metadata)

    assert list(store.keys()) == [IDP]
    assert [service["location"] for service in store.single_sign_on_service(IDP, BINDING_HTTP_REDIRECT)] == [SSO_URL]
    assert [cert.replace("\n", "") for _, cert in store.certs(IDP, "idpsso", "signing")] == [
        cert_body(lab.cert.read_text())
    ]
    assert list(store.shibmd_scopes(IDP, "idpsso_descriptor")) == [{"regexp": False, "text": SCOPE}]


def test_pysaml2_reads_lab_sp_metadata(tmp_path):
    path = tmp_path / "sp-metadata.xml"
    path.write_bytes(sp_metadata(SP, ACS))
    validate_with_saml_schemas(path.read_text())
    store = _metadata_store(path)

    assert list(store.keys()) == [SP]
    services = store.assertion_consumer_service(SP, BINDING_HTTP_POST)
    assert [(service["location"], service["index"]) for service in services] == [(ACS, "1")]
