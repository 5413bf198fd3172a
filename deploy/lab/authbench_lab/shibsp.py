"""Configuration of a real Shibboleth SP (Debian's Apache + mod_shib + shibd) in front of a lab cluster.

compose.yaml runs it in place of the lab's reference SP, at the same public URL (HAProxy's SP frontend
terminates TLS and forwards to Apache), so the lab's SP metadata, the IdP nodes and the SAML walk stay as
they are. Written by the init service into the shared volume; the SP container only reads it.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

from . import components, pki
from . import config as cfg
from .saml.metadata import idp_metadata

DIRECTORY = "shibboleth-sp"  # under the run directory
PROTECTED_PATH = "/secure"
PROTECTED_PAGE = "Protected content"
# Where run.sh copies the SP's key pair, owned by shibd's user (the volume's copy belongs to the init's).
KEY_IN_CONTAINER = "/etc/shibboleth/sp-key.pem"
CERT_IN_CONTAINER = "/etc/shibboleth/sp-cert.pem"
# HAProxy's health check reaches the Status handler from another container; the compose network is
# internal, so the handler answers any address on it (shibd's default is loopback only).
STATUS_ACL = "0.0.0.0/0 ::/0"
SESSION_LIFETIME_S = 28800
SESSION_TIMEOUT_S = 3600


def sp_dir(config: cfg.LabConfig) -> Path:
    return config.run_dir / DIRECTORY


def shibboleth2_xml(entity_id: str, idp_entity_id: str, metadata_path: Path) -> str:
    """SP 3's main file; the attribute map, policies and protocols are Debian's defaults in /etc/shibboleth."""
    return f"""<SPConfig xmlns="urn:mace:shibboleth:3.0:native:sp:config"
    xmlns:conf="urn:mace:shibboleth:3.0:native:sp:config" clockSkew="180">
  <ApplicationDefaults entityID={quoteattr(entity_id)} REMOTE_USER="eppn subject-id pairwise-id persistent-id">
    <Sessions lifetime="{SESSION_LIFETIME_S}" timeout="{SESSION_TIMEOUT_S}" relayState="ss:mem"
              checkAddress="false" handlerSSL="true" cookieProps="https" redirectLimit="exact">
      <SSO entityID={quoteattr(idp_entity_id)}>SAML2</SSO>
      <Logout>Local</Logout>
      <Handler type="Status" Location="/Status" acl="{STATUS_ACL}"/>
      <Handler type="Session" Location="/Session" showAttributeValues="false"/>
    </Sessions>
    <Errors supportContact="root@localhost" helpLocation="/about.html" styleSheet="/shibboleth-sp/main.css"/>
    <MetadataProvider type="XML" validate="true" path={quoteattr(str(metadata_path))}/>
    <AttributeExtractor type="XML" validate="true" reloadChanges="false" path="attribute-map.xml"/>
    <AttributeFilter type="XML" validate="true" path="attribute-policy.xml"/>
    <CredentialResolver type="File" use="signing" key="{KEY_IN_CONTAINER}" certificate="{CERT_IN_CONTAINER}"/>
    <CredentialResolver type="File" use="encryption" key="{KEY_IN_CONTAINER}" certificate="{CERT_IN_CONTAINER}"/>
  </ApplicationDefaults>
  <SecurityPolicyProvider type="XML" validate="true" path="security-policy.xml"/>
  <ProtocolProvider type="XML" validate="true" reloadChanges="false" path="protocols.xml"/>
</SPConfig>
"""


def apache_conf(public_url: str, port: int, config_path: Path, htdocs: Path) -> str:
    """Plain HTTP behind HAProxy's TLS: the canonical https name makes mod_shib build https URLs."""
    return f"""Listen {port}
ShibConfig {config_path}
ErrorLog /dev/stderr
<VirtualHost *:{port}>
  ServerName {public_url}
  UseCanonicalName On
  DocumentRoot {htdocs}
  <Directory {htdocs}>
    Require all granted
  </Directory>
  <Location /Shibboleth.sso>
    SetHandler shib
  </Location>
  <Location {PROTECTED_PATH}>
    AuthType shibboleth
    ShibRequestSetting requireSession 1
    Require shib-session
  </Location>
</VirtualHost>
"""


def write(config: cfg.LabConfig, backend: str) -> Path:
    """The SP's files for a reference cluster, trusting the IdP metadata the lab writes for it."""
    node = components.node_config(config, backend, "a")
    metadata = idp_metadata(node.entity_id, node.sso_url, Path(node.signing_cert).read_text(), node.scope)
    return write_trusting(config, backend, components.sp_config(config, backend).entity_id, node.entity_id, metadata)


def write_trusting(config: cfg.LabConfig, cluster: str, entity_id: str, idp_entity_id: str, metadata: bytes) -> Path:
    """The SP's files at a cluster's SP URL, trusting the IdP that `metadata` describes; its key pair is made once
    and kept, like the lab's."""
    directory = sp_dir(config)
    htdocs = directory / "htdocs"
    (htdocs / PROTECTED_PATH.strip("/")).mkdir(parents=True, exist_ok=True)
    pki.ensure_signing_pair(directory, subject=config.public_host or config.host)
    metadata_path = directory / "idp-metadata.xml"
    metadata_path.write_bytes(metadata)
    main = directory / "shibboleth2.xml"
    main.write_text(shibboleth2_xml(entity_id, idp_entity_id, metadata_path))
    port = config.cluster_port(cluster, "sp-app")
    (directory / "apache.conf").write_text(apache_conf(config.sp_url(cluster), port, main, htdocs))
    page = f"<!doctype html><title>{PROTECTED_PAGE}</title><h1>{PROTECTED_PAGE}</h1>\n"
    (htdocs / PROTECTED_PATH.strip("/") / "index.html").write_text(page)
    return directory
