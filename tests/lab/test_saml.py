"""The lab's SAML pieces alone: bindings, in-process signatures, the SP's checks, sealed cookies."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest

from authbench_lab.idp.response import Authentication, build_response
from authbench_lab.pki import ensure_secret, ensure_signing_pair, read_secret
from authbench_lab.saml.bindings import BindingError, decode_post, decode_redirect, redirect_url
from authbench_lab.saml.signing import Signer, Verifier
from authbench_lab.sealing import Sealer
from authbench_lab.sp.validate import Expected, SPRefusal, validate_response

ACS = "https://127.0.0.1:1/Shibboleth.sso/SAML2/POST"
EXPECTED = Expected(idp="https://idp.test/idp/shibboleth", audience="https://sp.test/shibboleth", acs_url=ACS,
                    request_id="_req1")


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    directory = tmp_path_factory.mktemp("keys")
    cert, key = ensure_signing_pair(directory, "idp.test")
    other_cert, other_key = ensure_signing_pair(directory / "other", "evil.test")
    return Signer(key, cert), Verifier(cert), Signer(other_key, other_cert)


def _response(signer, **changes) -> bytes:
    args = dict(issuer=EXPECTED.idp, audience=EXPECTED.audience, acs_url=ACS, in_response_to="_req1",
                scope="example.org",
                authentication=Authentication("user001", {"mail": "user001@example.org"}, time.time(), "_s1"))
    args.update(changes)
    return build_response(signer, **args)


def test_redirect_binding_round_trip():
    url = redirect_url("https://idp.test/sso?x=1", b"<samlp:AuthnRequest xmlns:samlp='urn:x' ID='_a'/>", "cookie:k&1")
    query = parse_qs(urlsplit(url).query)
    assert query["x"] == ["1"] and query["RelayState"] == ["cookie:k&1"]
    assert decode_redirect(query["SAMLRequest"][0]).get("ID") == "_a"


@pytest.mark.parametrize("garbage", ["", "!!!", "aGVsbG8="])
def test_undecodable_messages_raise_binding_error(garbage):
    with pytest.raises(BindingError):
        decode_redirect(garbage)
    with pytest.raises(BindingError):
        decode_post(garbage)


def test_valid_response_gives_user_and_attributes(keys):
    signer, verifier, _ = keys
    user, attributes = validate_response(_response(signer), verifier, EXPECTED)
    assert user == "user001@example.org"
    assert attributes["mail"] == "user001@example.org"


def test_signature_sits_after_issuer_as_the_schema_requires(keys):
    xml = _response(keys[0]).decode()
    assert xml.index("</saml:Issuer><ds:Signature") < xml.index("<samlp:Status>")


@pytest.mark.parametrize(
    ("changes", "expected", "reason"),
    [
        ({"in_response_to": "_other"}, EXPECTED, "InResponseTo"),
        ({"audience": "https://other.test/sp"}, EXPECTED, "audience"),
        ({"issuer": "https://evil.test/idp"}, EXPECTED, "issuer"),
        ({"acs_url": "https://127.0.0.1:2/acs"}, EXPECTED, "destination"),
    ],
)
def test_sp_refuses_responses_meant_for_something_else(keys, changes, expected, reason):
    with pytest.raises(SPRefusal, match=reason):
        validate_response(_response(keys[0], **changes), keys[1], expected)


def test_sp_refuses_expired_and_future_responses(keys):
    xml = _response(keys[0])
    with pytest.raises(SPRefusal, match="expired|window"):
        validate_response(xml, keys[1], EXPECTED, now=time.time() + 3600)
    with pytest.raises(SPRefusal, match="not yet valid|window"):
        validate_response(xml, keys[1], EXPECTED, now=time.time() - 3600)


def test_sp_refuses_a_response_signed_by_another_key(keys):
    with pytest.raises(SPRefusal, match="signature"):
        validate_response(_response(keys[2]), keys[1], EXPECTED)


def test_sp_refuses_a_wrapped_assertion(keys):
    """An unsigned forged assertion added beside the signed content must not be read."""
    xml = _response(keys[0])
    forged = xml.replace(b"<saml:Assertion ", b"<saml:Assertion ID=\"_forged\" Version=\"2.0\"><saml:Issuer>x"
                         b"</saml:Issuer></saml:Assertion><saml:Assertion ", 1)
    with pytest.raises(SPRefusal):
        validate_response(forged, keys[1], EXPECTED)


def test_sealer_round_trip_and_refusals(tmp_path):
    sealer = Sealer(read_secret(ensure_secret(tmp_path / "k")))
    token = sealer.seal({"user": "u"}, "idp-session", 60)
    assert sealer.open(token, "idp-session") == {"user": "u"}
    assert sealer.open(token, "sp-session") is None  # sealed for another purpose
    assert sealer.open(token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1], "idp-session") is None
    assert sealer.open(sealer.seal({"user": "u"}, "idp-session", -1), "idp-session") is None  # expired
    other = Sealer(read_secret(ensure_secret(tmp_path / "other")))
    assert other.open(token, "idp-session") is None
    assert sealer.open("%%%", "idp-session") is None
