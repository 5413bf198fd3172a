"""Virtual-SP mode: authbench as the SP, registered at the lab IdP through its metadata directory."""

from __future__ import annotations

import base64
import zlib
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from lxml import etree

from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import (
    ACS,
    IDP_SSO,
    SAML_STATUS_NOT_SUCCESS,
    SP_PAGE,
    SP_REFUSED,
    sso_login,
)
from authbench.journeys.virtual_sp import DEFAULT_ACS_URL, DEFAULT_ENTITY_ID, NS, VirtualSP, load_idp_certificate
from authbench_lab.config import password_for

BACKEND = "stateless"
OTHER_ENTITY_ID = "https://authbench.invalid/other-sp"
IDP_PAGES = ["Loading Session Information", "Web Login Service", "Saving Session Information",
             "Redirecting to the service"]


@pytest.fixture(scope="module")
def idp(lab, tmp_path_factory):
    """The IdP's SSO URL and its metadata (for the signing key); two virtual SPs registered with it."""
    browser = FastBrowser(verify=str(lab.ca_cert))
    metadata = tmp_path_factory.mktemp("virtual-sp") / "idp-metadata.xml"
    metadata.write_text(browser.get(lab.lb_url(BACKEND) + "/idp/shibboleth").text)
    sso = lab.lb_url(BACKEND) + "/idp/profile/SAML2/Redirect/SSO"
    registered = []
    for name, entity_id in (("authbench-virtual.xml", DEFAULT_ENTITY_ID), ("authbench-other.xml", OTHER_ENTITY_ID)):
        path = lab.metadata_dir / name
        path.write_text(VirtualSP(sso, entity_id=entity_id).sp_metadata())  # the IdP re-reads its directory
        registered.append(path)
    try:
        yield sso, metadata
    finally:
        for path in registered:
            path.unlink(missing_ok=True)


def test_login_without_signature_check(lab, idp):
    sso, _ = idp
    steps = []
    browser = FastBrowser(verify=str(lab.ca_cert), on_request=lambda name, method, *_: steps.append((method, name)))
    outcome = VirtualSP(sso).login(browser, "user050", password_for("user050"))
    assert outcome.ok and outcome.password_asked, outcome
    assert outcome.pages == IDP_PAGES
    assert steps[0] == ("GET", IDP_SSO) and all(name not in (SP_PAGE, ACS) for _, name in steps)  # no SP contacted


def test_login_with_signature_check(lab, idp):
    sso, metadata = idp
    sp = VirtualSP(sso, idp_certificate=str(metadata), verify_signature=True)
    outcome = sp.login(FastBrowser(verify=str(lab.ca_cert)), "user051", password_for("user051"))
    assert outcome.ok, outcome


def _response_for(lab, sp: VirtualSP, user: str) -> tuple[str, str]:
    """(SAMLResponse, request ID) the IdP issued to `sp` — walked to the form, not consumed."""
    url, request_id = sp.authn_request()
    outcome = sso_login(FastBrowser(verify=str(lab.ca_cert)), url, user, password_for(user), stop_at_response=True,
                        start_step=IDP_SSO)
    assert outcome.ok and outcome.response_form is not None, outcome
    return outcome.response_form.fields["SAMLResponse"], request_id


@pytest.mark.parametrize("verify", [False, True])
def test_response_for_another_audience_is_refused(lab, idp, verify):
    sso, metadata = idp
    response, request_id = _response_for(lab, VirtualSP(sso, entity_id=OTHER_ENTITY_ID), "user052")
    sp = VirtualSP(sso, idp_certificate=str(metadata), verify_signature=verify)
    reason, detail = sp.check_response(response, request_id)
    assert reason == SP_REFUSED and "audience" in detail and OTHER_ENTITY_ID in detail
    assert VirtualSP(sso, entity_id=OTHER_ENTITY_ID).check_response(response, request_id) is None


def test_tampered_response_and_other_request_are_refused(lab, idp):
    sso, metadata = idp
    sp = VirtualSP(sso, idp_certificate=str(metadata), verify_signature=True)
    response, request_id = _response_for(lab, sp, "user053")
    assert sp.check_response(response, request_id) is None
    forged = base64.b64encode(base64.b64decode(response).replace(b"user053@", b"admin0@")).decode()
    reason, detail = sp.check_response(forged, request_id)
    assert reason == SP_REFUSED and detail.startswith("signature not valid")
    reason, detail = sp.check_response(response, "_not-this-request")
    assert reason == SP_REFUSED and "InResponseTo" in detail


def test_error_status_is_not_success():
    xml = (f'<samlp:Response xmlns:samlp="{NS["samlp"]}" ID="_r" InResponseTo="_q"><samlp:Status>'
           '<samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Requester"/></samlp:Status></samlp:Response>')
    reason, detail = VirtualSP("https://idp/sso").check_response(base64.b64encode(xml.encode()).decode(), "_q")
    assert reason == SAML_STATUS_NOT_SUCCESS and "Requester" in detail


def test_metadata_and_authn_request_name_this_sp():
    sp = VirtualSP("https://idp.example.org/idp/profile/SAML2/Redirect/SSO?x=1")
    metadata = etree.fromstring(sp.sp_metadata().encode())
    acs = metadata.find("md:SPSSODescriptor/md:AssertionConsumerService", NS)
    assert metadata.get("entityID") == DEFAULT_ENTITY_ID
    assert acs.get("Location") == DEFAULT_ACS_URL and acs.get("Binding").endswith(":HTTP-POST")
    url, request_id = sp.authn_request()
    query = parse_qs(urlsplit(url).query)
    assert query["x"] == ["1"] and query["RelayState"] == ["authbench"]
    request = etree.fromstring(zlib.decompress(base64.b64decode(query["SAMLRequest"][0]), -15))
    assert request.get("ID") == request_id and request.get("AssertionConsumerServiceURL") == DEFAULT_ACS_URL
    assert request.findtext("saml:Issuer", namespaces=NS) == DEFAULT_ENTITY_ID
    assert sp.authn_request()[1] != request_id


def test_certificate_from_pem_or_metadata(lab, idp):
    _, metadata = idp
    from_metadata = load_idp_certificate(metadata)
    pem = metadata.with_suffix(".pem")
    pem.write_bytes(from_metadata.public_bytes(Encoding.PEM))
    assert load_idp_certificate(pem) == from_metadata
    with pytest.raises(ValueError):
        VirtualSP("https://idp/sso", verify_signature=True)
