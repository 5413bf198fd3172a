"""A new SP session for the same browser: drop the cookies the SP set, keep those the IdP set.

Why by origin and not by path or name: every IdP product puts its cookies somewhere else (Shibboleth
under /idp, SimpleSAMLphp and many others at /, Keycloak under /realms/…) and names them as it likes,
so any rule about paths or names throws some IdP's SSO session away with the SP's and makes a cluster
that shares sessions look as if it did not. The browser (cookies.py) remembers which origin set each
cookie; a returning user, or the cluster checks' "new SP session via the other node", forgets exactly
what the SP's origin set and keeps what the IdP's origins (the balancer's and every node's) set.

Cookies are kept per host, as browsers do, so when the SP and the IdP live on different hosts every
cookie of the SP's host goes too. When the SP and the IdP share one origin (host and port), the URL
of the response that set a cookie decides: under one of the IdP's base URLs it is the IdP's. If the
IdP's base URL is the whole origin even that cannot tell them apart; nothing is guessed then, the
cookies are kept and `Forgotten.undecided` says why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .cookies import Cookie, CookieJar, host_and_port, origin_text


@dataclass(frozen=True)
class Forgotten:
    """What `forget_sp_session` did, by cookie name only (values are session secrets)."""

    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    note: str = ""  # how the SP's cookies were told from the IdP's, when not simply by origin
    undecided: str = ""  # why the SP's cookies could not be told from the IdP's ("" when they could)

    def __str__(self) -> str:
        text = f"dropped {self.dropped} (the SP's), kept {self.kept}"
        return "; ".join(part for part in (text, self.note, self.undecided) if part)


def origin_of(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, spelt as the browser spells the origins of its cookies."""
    parts = urlsplit(url)
    return (parts.scheme, *host_and_port(parts.scheme, parts.netloc.rpartition("@")[2]))


def _path_prefix(url: str) -> str:
    return urlsplit(url).path.rstrip("/")


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def forget_sp_session(jar: CookieJar, sp_url: str, idp_urls: Iterable[str]) -> Forgotten:
    """Drop from `jar` the cookies the SP set, keep the IdP's; `idp_urls` are its base URLs (balancer, nodes)."""
    idp_urls = list(idp_urls)
    sp = origin_of(sp_url)
    sp_origin = origin_text(*sp)
    idp = {origin_of(url) for url in idp_urls}
    idp_origins = {origin_text(*origin) for origin in idp}
    idp_hosts = {host for _scheme, host, _port in idp}
    # IdP base paths on the SP's own origin: the only way left to tell the two apart there
    shared_prefixes = [_path_prefix(url) for url in idp_urls if origin_text(*origin_of(url)) == sp_origin]
    shared = bool(shared_prefixes)
    undecided = ""
    if shared and "" in shared_prefixes:
        undecided = (f"undecided: the SP and the IdP share {sp_origin} and the IdP's base URL is the whole origin, "
                     "so the SP's cookies cannot be told from the IdP's and none were dropped; give the IdP's "
                     "base URL with its path")

    def is_sp(host: str, cookie: Cookie) -> bool:
        if cookie.origin == sp_origin:
            if not shared:
                return True
            return not undecided and not any(_under(cookie.set_at, prefix) for prefix in shared_prefixes)
        if cookie.origin in idp_origins:
            return False
        return host == sp[1] and sp[1] not in idp_hosts

    dropped, kept = [], []
    for host, cookie in jar:
        (dropped if is_sp(host, cookie) else kept).append(cookie.name)
    jar.clear(is_sp)
    note = f"the SP and the IdP share {sp_origin}: told apart by the IdP's base path" if shared and not undecided \
        else ""
    return Forgotten(sorted(set(dropped)), sorted(set(kept)), note, undecided)
