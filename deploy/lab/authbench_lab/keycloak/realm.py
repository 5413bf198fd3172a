"""The realm Keycloak imports on first start: users from the lab's slapd, the lab PKI's signing key, the SP.

Users stay in LDAP (read-only federation, as the 2012 report kept them in OpenLDAP): Keycloak searches and binds
as the lab IdPs' service account and checks each password by a bind as the user. The SP is the client its own
metadata describes (entity ID, HTTP-POST ACS), answered with a signed Response and eduPersonPrincipalName, the
attribute the lab's SP takes REMOTE_USER from. Two OpenID Connect RPs (OIDC_CLIENT_ID, OIDC_PUBLIC_CLIENT_ID) serve
the OIDC kind as a virtual RP.

A second realm (LOCAL_USERS_REALM) keeps a few users in Keycloak's own database, their passwords hashed by Keycloak's
default algorithm at import: what the vendor's sizing guide counts ("password-based logins"), which the LDAP realm
never hashes (slapd checks each password by a bind). bench/keycloak_oidc.py measures both.
"""

from __future__ import annotations

import json

REALM = "authbench"
LOCAL_USERS_REALM = "authbench-local-users"
LOCAL_USERS = 20  # user000 … user019, hashed at import (a few ms each with Keycloak's default argon2)
# OpenID Connect RPs (issue 28): a confidential client (secret made per lab, in a 0600 file) and a public one, both
# for the code flow with PKCE S256, redirecting to the OIDC kind's default virtual-RP URI (nothing listens there).
OIDC_CLIENT_ID = "authbench-oidc"
OIDC_PUBLIC_CLIENT_ID = "authbench-oidc-public"
OIDC_REDIRECT_URI = "http://127.0.0.1:9/authbench/callback"  # authbench.kinds.oidc.DEFAULT_REDIRECT_URI
EPPN = "urn:oid:1.3.6.1.4.1.5923.1.1.1.6"
KEY_PRIORITY = "200"  # above any generated key, so the lab PKI's pair signs
LDAP_SEARCH_ONE_LEVEL = "1"
MAPPER = "org.keycloak.storage.ldap.mappers.LDAPStorageMapper"
# LDAP attribute -> Keycloak user property: a complete profile, so no "update your account" page interrupts a login
LDAP_ATTRIBUTES = {"uid": "username", "mail": "email", "givenName": "firstName", "sn": "lastName"}


def _config(**values: str) -> dict[str, list[str]]:
    """Keycloak component config: every value is a list of strings."""
    return {name: [value] for name, value in values.items()}


def _ldap_mappers() -> list[dict]:
    return [{"name": f"{prop} from {attribute}", "providerId": "user-attribute-ldap-mapper",
             "config": {"ldap.attribute": [attribute], "user.model.attribute": [prop], "read.only": ["true"],
                        "always.read.value.from.ldap": ["false"],
                        "is.mandatory.in.ldap": ["true" if prop == "username" else "false"]}}
            for attribute, prop in LDAP_ATTRIBUTES.items()]


def _ldap(ldap_url: str, bind_dn: str, bind_password: str, users_dn: str) -> dict:
    return {
        "name": "lab-slapd", "providerId": "ldap",
        "subComponents": {MAPPER: _ldap_mappers()},
        "config": _config(
            enabled="true", priority="0", vendor="other", editMode="READ_ONLY", connectionUrl=ldap_url,
            authType="simple", bindDn=bind_dn, bindCredential=bind_password, usersDn=users_dn,
            usernameLDAPAttribute="uid", rdnLDAPAttribute="uid", uuidLDAPAttribute="entryUUID",
            userObjectClasses="inetOrgPerson", searchScope=LDAP_SEARCH_ONE_LEVEL, importEnabled="true",
            syncRegistrations="false", trustEmail="true", pagination="false", connectionPooling="true",
            useTruststoreSpi="never", fullSyncPeriod="-1", changedSyncPeriod="-1", cachePolicy="DEFAULT",
            validatePasswordPolicy="false", allowKerberosAuthentication="false",
            useKerberosForPasswordAuthentication="false"),
    }


def _keys(signing_key: str, signing_cert: str) -> list[dict]:
    """The lab PKI's RSA pair signs; HMAC and AES keys (Keycloak's own cookies and tokens) are generated."""
    return [
        {"name": "lab-pki-rsa", "providerId": "rsa", "subComponents": {},
         "config": _config(priority=KEY_PRIORITY, enabled="true", active="true", algorithm="RS256",
                           privateKey=signing_key, certificate=signing_cert)},
        {"name": "hmac-generated", "providerId": "hmac-generated", "subComponents": {},
         "config": _config(priority="100", algorithm="HS512")},
        {"name": "aes-generated", "providerId": "aes-generated", "subComponents": {},
         "config": _config(priority="100")},
    ]


def _client(sp_entity_id: str, acs_urls: list[str]) -> dict:
    return {
        "clientId": sp_entity_id, "name": "authbench lab SP", "protocol": "saml", "enabled": True,
        "redirectUris": acs_urls, "consentRequired": False, "fullScopeAllowed": True, "frontchannelLogout": True,
        "attributes": {
            "saml_assertion_consumer_url_post": acs_urls[0],
            "saml.server.signature": "true",  # the whole Response is signed: the lab's SP checks that signature
            "saml.assertion.signature": "false",
            "saml.client.signature": "false",  # the SP's AuthnRequests are unsigned
            "saml.encrypt": "false",
            "saml.force.post.binding": "true",
            "saml.authnstatement": "true",
            "saml_name_id_format": "transient",
            "saml.signature.algorithm": "RSA_SHA256",
            "saml_signature_canonicalization_method": "http://www.w3.org/2001/10/xml-exc-c14n#",
        },
        "protocolMappers": [{
            "name": "eduPersonPrincipalName", "protocol": "saml", "protocolMapper": "saml-user-property-mapper",
            "consentRequired": False,
            "config": {"user.attribute": "username", "attribute.name": EPPN, "attribute.nameformat": "URI Reference",
                       "friendly.name": "eduPersonPrincipalName"},
        }],
    }


def _oidc_client(client_id: str, secret: str) -> dict:
    """An OpenID Connect RP for the code flow, PKCE S256 required; with a secret a confidential client (basic or post
    at the token endpoint) whose service account also allows client_credentials, without one a public client."""
    client = {
        "clientId": client_id, "name": f"authbench OIDC RP ({'confidential' if secret else 'public'})",
        "protocol": "openid-connect", "enabled": True, "publicClient": not secret, "standardFlowEnabled": True,
        "implicitFlowEnabled": False, "directAccessGrantsEnabled": False, "consentRequired": False,
        "fullScopeAllowed": True, "redirectUris": [OIDC_REDIRECT_URI], "webOrigins": [], "frontchannelLogout": False,
        "attributes": {"pkce.code.challenge.method": "S256", "post.logout.redirect.uris": "+"},
    }
    if secret:
        client.update(clientAuthenticatorType="client-secret", secret=secret, serviceAccountsEnabled=True,
                      protocolMappers=[_audience(client_id)])
    return client


def _audience(client_id: str) -> dict:
    """The client itself in its access tokens' `aud`: Keycloak 26 answers an introspection `active: false` ("Client
    … is not in the token audience", its event log) when the client asking is not, and by default a token's audience
    is only `account`."""
    return {"name": "own audience", "protocol": "openid-connect", "protocolMapper": "oidc-audience-mapper",
            "consentRequired": False,
            "config": {"included.client.audience": client_id, "access.token.claim": "true", "id.token.claim": "false",
                       "introspection.token.claim": "true"}}


def render(*, ldap_url: str, bind_dn: str, bind_password: str, users_dn: str, signing_key: str, signing_cert: str,
           sp_entity_id: str, acs_urls: list[str], oidc_secret: str) -> str:
    realm = {
        "realm": REALM, "enabled": True, "sslRequired": "external", "registrationAllowed": False,
        "loginWithEmailAllowed": False, "bruteForceProtected": False,
        "components": {
            "org.keycloak.keys.KeyProvider": _keys(signing_key, signing_cert),
            "org.keycloak.storage.UserStorageProvider": [_ldap(ldap_url, bind_dn, bind_password, users_dn)],
        },
        "clients": [_client(sp_entity_id, acs_urls), _oidc_client(OIDC_CLIENT_ID, oidc_secret),
                    _oidc_client(OIDC_PUBLIC_CLIENT_ID, "")],
    }
    return json.dumps(realm, indent=2)


def render_local_users(*, users: list[tuple[str, str]], oidc_secret: str) -> str:
    """The realm of Keycloak-held users (username, password) and the confidential OIDC RP: no LDAP, no SAML SP, keys
    generated by Keycloak. A plaintext `value` in an import is hashed by Keycloak with its default algorithm."""
    realm = {
        "realm": LOCAL_USERS_REALM, "enabled": True, "sslRequired": "external", "registrationAllowed": False,
        "bruteForceProtected": False,
        "users": [{"username": name, "enabled": True, "emailVerified": True, "email": f"{name}@example.org",
                   "firstName": name, "lastName": "Local", "requiredActions": [],
                   "credentials": [{"type": "password", "value": password, "temporary": False}]}
                  for name, password in users],
        "clients": [_oidc_client(OIDC_CLIENT_ID, oidc_secret)],
    }
    return json.dumps(realm, indent=2)
