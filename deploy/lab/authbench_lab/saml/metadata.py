"""SAML 2.0 metadata: what the lab publishes for its IdPs and SPs, and reading SP metadata back."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

from lxml import etree

from .xml import NS, cert_body

POST_BINDING = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
REDIRECT_BINDING = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"


def idp_metadata(entity_id: str, sso_url: str, signing_cert_pem: str, scope: str) -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="{NS['md']}" xmlns:ds="{NS['ds']}" xmlns:shibmd="urn:mace:shibboleth:metadata:1.0" entityID={quoteattr(entity_id)}>
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:Extensions><shibmd:Scope regexp="false">{scope}</shibmd:Scope></md:Extensions>
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo><ds:X509Data><ds:X509Certificate>{cert_body(signing_cert_pem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:transient</md:NameIDFormat>
    <md:SingleSignOnService Binding="{REDIRECT_BINDING}" Location={quoteattr(sso_url)}/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>
""".encode()


def sp_metadata(entity_id: str, acs_url: str) -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="{NS['md']}" entityID={quoteattr(entity_id)}>
  <md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:transient</md:NameIDFormat>
    <md:AssertionConsumerService Binding="{POST_BINDING}" Location={quoteattr(acs_url)} index="1"/>
  </md:SPSSODescriptor>
</md:EntityDescriptor>
""".encode()


def load_sp_registry(metadata_dir: str | Path) -> dict[str, list[str]]:
    """entityID → HTTP-POST ACS URLs of every SP described by `*.xml` files in the directory."""
    registry: dict[str, list[str]] = {}
    for path in sorted(Path(metadata_dir).glob("*.xml")):
        root = etree.parse(str(path)).getroot()
        descriptors = [root] if root.tag == f"{{{NS['md']}}}EntityDescriptor" else root.iter(
            f"{{{NS['md']}}}EntityDescriptor"
        )
        for entity in descriptors:
            acs = [
                el.get("Location")
                for el in entity.iterfind("md:SPSSODescriptor/md:AssertionConsumerService", NS)
                if el.get("Binding") == POST_BINDING
            ]
            if acs:
                registry[entity.get("entityID")] = acs
    return registry
