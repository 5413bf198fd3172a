"""--validate-id-token: the ID token's signature against the provider's JWKS, and its iss, aud, exp and nonce.

PyJWT does the JOSE work (a maintained library; nothing hand-made). The JWKS is fetched once per process, before
its first journey, and kept: a load generator must not ask for the keys once per login. A token signed with a
key id the cached set lacks fails (after one refetch per process, for a provider that rotated its keys).
"""

from __future__ import annotations

import jwt

from .flow import DISCOVERY_ERROR, ID_TOKEN_INVALID, JWKS, FlowFailed, Provider, read_json

LEEWAY_S = 30  # clock skew allowed on exp, iat and nbf
ASYMMETRIC = frozenset(("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"))


class Validator:
    """One per process (in the kind's settings): the provider's keys, fetched once."""

    def __init__(self, provider: Provider, client_id: str) -> None:
        self.provider, self.client_id = provider, client_id
        self.algorithms = [alg for alg in provider.signing_algs if alg in ASYMMETRIC] or ["RS256"]
        self.keys: jwt.PyJWKSet | None = None
        self.refetched = False

    def fetch(self, rp) -> jwt.PyJWKSet:
        if not self.provider.jwks_uri:
            raise FlowFailed(DISCOVERY_ERROR, "--validate-id-token: the discovery document has no jwks_uri")
        page = rp.get(self.provider.jwks_uri, name=JWKS)
        try:
            return jwt.PyJWKSet.from_dict(read_json(page, "jwks_uri", ID_TOKEN_INVALID))
        except jwt.PyJWTError as exc:
            raise FlowFailed(ID_TOKEN_INVALID, f"the JWKS is not usable: {exc}") from None

    def key(self, rp, kid: str | None) -> jwt.PyJWK:
        if self.keys is None:
            self.keys = self.fetch(rp)
        for _ in range(2):
            found = [key for key in self.keys.keys if kid is None or key.key_id == kid]
            if found:
                return found[0]
            if self.refetched:
                break
            self.refetched, self.keys = True, self.fetch(rp)
        raise FlowFailed(ID_TOKEN_INVALID, f"no key {kid!r} in the provider's JWKS")

    def validate(self, rp, id_token: str, nonce: str) -> dict:
        """The token's claims once every check passed; FlowFailed(ID_TOKEN_INVALID) saying which did not."""
        try:
            header = jwt.get_unverified_header(id_token)
            claims = jwt.decode(id_token, self.key(rp, header.get("kid")), algorithms=self.algorithms,
                                audience=self.client_id, issuer=self.provider.issuer, leeway=LEEWAY_S,
                                options={"require": ["exp", "iat", "iss", "aud", "sub"]})
        except jwt.PyJWTError as exc:
            raise FlowFailed(ID_TOKEN_INVALID, f"{type(exc).__name__}: {exc}") from None
        if claims.get("nonce") != nonce:
            raise FlowFailed(ID_TOKEN_INVALID, "its nonce is not the request's")
        return claims
