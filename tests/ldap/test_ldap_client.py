"""The gevent-cooperative LDAP connection against the lab's slapd: binds, reasons, TLS, and real overlap."""

from __future__ import annotations

import time

import gevent
import ldap
import pytest

from authbench.kinds.ldap.client import CONNECT_ERROR, NO_ENTRY, SCOPES, Connection, Endpoint, LdapFailure
from authbench_lab import slapd
from authbench_lab.config import LDAP_IDP_DN, LDAP_PEOPLE, password_for

USERS = 10
BINDS_EACH = 20


def dn(user: str) -> str:
    return f"uid={user},{LDAP_PEOPLE}"


def test_bind_rebind_and_the_result_code_as_reason(lab):
    conn = Connection(Endpoint(lab.ldap_url()))
    conn.bind(dn("user001"), password_for("user001"))
    with pytest.raises(LdapFailure) as failure:
        conn.bind(dn("user001"), "wrong")
    assert failure.value.reason == "invalidCredentials (49)"
    conn.bind(dn("user002"), password_for("user002"))  # the same connection binds again
    assert conn.opened == 1
    conn.close()


def test_tls_verifies_certificates_by_default(lab):
    for endpoint in (Endpoint(lab.ldaps_url(), ca_file=str(lab.ca_cert)),
                     Endpoint(lab.ldap_url(), start_tls=True, ca_file=str(lab.ca_cert)),
                     Endpoint(lab.ldaps_url(), verify=False)):
        Connection(endpoint).bind(dn("user003"), password_for("user003"))
    with pytest.raises(LdapFailure) as failure:  # the lab's CA is not among the system's
        Connection(Endpoint(lab.ldaps_url())).bind(dn("user003"), password_for("user003"))
    assert failure.value.reason == CONNECT_ERROR


def test_search_then_bind_with_a_service_account(lab):
    searcher = Connection(Endpoint(lab.ldap_url()))
    searcher.bind(LDAP_IDP_DN, slapd.paths(lab).idp_password.read_text().strip())
    found = searcher.find_dn(LDAP_PEOPLE, SCOPES["one"], "(uid=user004)")
    assert found == dn("user004")
    with pytest.raises(LdapFailure) as failure:
        searcher.find_dn(LDAP_PEOPLE, SCOPES["one"], "(uid=nobody)")
    assert failure.value.reason == NO_ENTRY


def test_a_closed_port_is_a_connect_error(lab):
    with pytest.raises(LdapFailure) as failure:
        Connection(Endpoint(f"ldap://127.0.0.1:{lab.shared_port('ldap') + 5}", timeout=2)).bind("cn=x", "y")
    assert failure.value.reason == CONNECT_ERROR


def most_in_flight(spans: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def run_users(bind) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []

    def user(index: int) -> None:
        name = f"user{index:03d}"
        for _ in range(BINDS_EACH):
            began = time.perf_counter()
            bind(index, dn(name), password_for(name))
            spans.append((began, time.perf_counter()))

    gevent.joinall([gevent.spawn(user, i) for i in range(USERS)], raise_error=True)
    return spans


def test_ten_users_on_one_worker_overlap_their_binds(lab):
    cooperative = [Connection(Endpoint(lab.ldap_url())) for _ in range(USERS)]
    spans = run_users(lambda i, who, password: cooperative[i].bind(who, password))
    assert len(spans) == USERS * BINDS_EACH
    assert most_in_flight(spans) >= USERS // 2  # binds wait on their sockets side by side

    blocking = [ldap.initialize(lab.ldap_url()) for _ in range(USERS)]  # the control: python-ldap's own _s call
    spans = run_users(lambda i, who, password: blocking[i].simple_bind_s(who, password))
    assert most_in_flight(spans) == 1  # each bind stalls every other greenlet


def test_a_refused_service_bind_never_leaves_an_anonymous_searcher(lab):
    searcher = Connection(Endpoint(lab.ldap_url()))
    with pytest.raises(LdapFailure):
        searcher.bind_once(LDAP_IDP_DN, "wrong")
    assert not searcher.is_open
    searcher.bind_once(LDAP_IDP_DN, slapd.paths(lab).idp_password.read_text().strip())
    searcher.bind_once(LDAP_IDP_DN, "not used: already bound")
    assert searcher.find_dn(LDAP_PEOPLE, SCOPES["one"], "(uid=user005)") == dn("user005")
