"""The reference IdP node as a WSGI app (served by gunicorn, several workers per node).

Routes a client sees on a Shibboleth IdP: metadata at /idp/shibboleth, SAML 2.0 SSO at
/idp/profile/SAML2/Redirect/SSO, a status page at /idp/status (the load balancer's health check).
"""

from __future__ import annotations

import os
from pathlib import Path

from werkzeug.wrappers import Request, Response

from ..config import NODE_CONFIG_ENV, NodeConfig
from ..pki import read_secret
from ..saml.metadata import idp_metadata, load_sp_registry
from ..saml.signing import Signer
from ..sealing import Sealer
from . import pages
from .directory import Directory, DirectoryUnavailable
from .flow import SSO_PATH, LoginFlow, SPRegistry
from .sessions import SealedSessions, StoredSessions
from .stores import StoreUnavailable, stores_for


def build_flow(config: NodeConfig) -> LoginFlow:
    conversations, session_store = stores_for(config)
    if session_store is None:
        sessions = SealedSessions(Sealer(read_secret(config.sealer_key)), config.session_lifetime)
    else:
        sessions = StoredSessions(session_store, config.session_lifetime)
    directory = Directory(config.ldap_url, config.ldap_bind_dn, read_secret(config.ldap_bind_password_file),
                          config.ldap_base)
    return LoginFlow(
        entity_id=config.entity_id,
        scope=config.scope,
        client_storage=config.client_storage,
        conversations=conversations,
        sessions=sessions,
        directory=directory,
        signer=Signer(config.signing_key, config.signing_cert),
        registry=SPRegistry(config.metadata_dir, load_sp_registry),
        cookie_path=config.cookie_path,
    )


def create_app(config: NodeConfig | None = None):
    config = config or NodeConfig.load(os.environ[NODE_CONFIG_ENV])
    flow = build_flow(config)
    metadata = idp_metadata(config.entity_id, config.sso_url, Path(config.signing_cert).read_text(), config.scope)
    status = f"ok backend={config.backend} node={config.node}\n"

    @Request.application
    def app(request: Request) -> Response:
        path = request.path
        try:
            if path == SSO_PATH:
                execution = request.args.get("execution")
                if execution is not None:
                    return flow.resume(request, execution)
                if request.method == "GET":
                    return flow.start(request)
                return Response(pages.error("Unsupported Request", "Use GET for this binding."), 405,
                                mimetype="text/html")
            if path == "/idp/status":
                return Response(status, mimetype="text/plain")
            if path == "/idp/shibboleth":
                return Response(metadata, mimetype="application/samlmetadata+xml")
        except (StoreUnavailable, DirectoryUnavailable) as exc:
            # The storage or the directory is down: the login can be neither continued nor decided.
            return Response(pages.error("Service Unavailable", str(exc)), 503, mimetype="text/html")
        return Response(pages.error("Not Found", path), 404, mimetype="text/html")

    return app
