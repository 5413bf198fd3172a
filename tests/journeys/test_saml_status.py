"""Reading the SAML Response's status without decoding more of it than needed."""

from __future__ import annotations

import base64

from authbench.journeys.saml import SAML_SUCCESS, STATUS_PREFIX, saml_status

REQUESTER = "urn:oasis:names:tc:SAML:2.0:status:Requester"


def response(status: str, before_status: int = 0, after_status: int = 0, nested: str = SAML_SUCCESS) -> str:
    """A SAML Response with `before_status` bytes of signature ahead of its Status, base64-encoded."""
    xml = (f'<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"><ds:Signature>{"x" * before_status}'
           f'</ds:Signature><samlp:Status><samlp:StatusCode Value="{status}"><samlp:StatusCode Value="{nested}"/>'
           f'</samlp:StatusCode></samlp:Status><saml:Assertion>{"y" * after_status}</saml:Assertion>'
           '</samlp:Response>')
    return base64.b64encode(xml.encode()).decode()


def test_the_top_level_status_is_read():
    assert saml_status(response(SAML_SUCCESS)) == SAML_SUCCESS
    assert saml_status(response(REQUESTER, nested="urn:oasis:names:tc:SAML:2.0:status:AuthnFailed")) == REQUESTER


def test_a_status_past_the_prefix_or_cut_by_it_is_still_found():
    prefix_bytes = STATUS_PREFIX * 3 // 4
    far = response(REQUESTER, before_status=prefix_bytes + 100, after_status=20000)
    assert saml_status(far) == REQUESTER
    for cut in range(-60, 10, 7):  # the prefix ends inside the first StatusCode: never a cut-short value
        assert saml_status(response(REQUESTER, before_status=prefix_bytes - 120 + cut, after_status=9000)) == REQUESTER


def test_line_wrapped_base64_and_garbage():
    text = response(REQUESTER, before_status=STATUS_PREFIX, after_status=5000)
    wrapped = "\n".join(text[i:i + 75] for i in range(0, len(text), 75))  # the prefix is not whole quanta
    assert saml_status(wrapped) == REQUESTER
    assert saml_status("not base64 at all!") is None
    assert saml_status(base64.b64encode(b"<html>no status</html>").decode()) is None
