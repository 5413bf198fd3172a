"""The two SAML 2.0 bindings of Web Browser SSO: HTTP-Redirect (requests) and HTTP-POST (responses)."""

from __future__ import annotations

import base64
import zlib
from urllib.parse import urlencode

from lxml import etree

MAX_MESSAGE_BYTES = 256 * 1024  # refuse absurd messages before inflating or parsing them


class BindingError(ValueError):
    """The message could not be decoded; the text says why."""


def _parser() -> etree.XMLParser:
    # No entities, no network: SAML messages come from strangers.
    return etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=False, huge_tree=False)


def redirect_url(endpoint: str, message: bytes, relay_state: str | None) -> str:
    """The URL that carries `message` by the HTTP-Redirect binding (raw DEFLATE, base64, query)."""
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    deflated = compressor.compress(message) + compressor.flush()
    params = {"SAMLRequest": base64.b64encode(deflated).decode()}
    if relay_state is not None:
        params["RelayState"] = relay_state
    separator = "&" if "?" in endpoint else "?"
    return endpoint + separator + urlencode(params)


def decode_redirect(value: str) -> etree._Element:
    try:
        raw = base64.b64decode(value, validate=False)
        inflater = zlib.decompressobj(-15)
        xml = inflater.decompress(raw, MAX_MESSAGE_BYTES)
        if inflater.unconsumed_tail:
            raise BindingError("message too large")
        return etree.fromstring(xml, _parser())
    except (ValueError, zlib.error, etree.XMLSyntaxError) as exc:
        raise BindingError(f"undecodable HTTP-Redirect message: {exc}") from exc


def encode_post(message: bytes) -> str:
    return base64.b64encode(message).decode()


def decode_post(value: str) -> bytes:
    if len(value) > MAX_MESSAGE_BYTES * 2:
        raise BindingError("message too large")
    try:
        xml = base64.b64decode(value, validate=False)
        etree.fromstring(xml, _parser())  # well-formed, or refuse now with a clear reason
    except (ValueError, etree.XMLSyntaxError) as exc:
        raise BindingError(f"undecodable HTTP-POST message: {exc}") from exc
    return xml
