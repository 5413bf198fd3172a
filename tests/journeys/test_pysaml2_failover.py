"""Test 4 on an IdP we did not shape like Shibboleth: pysaml2 nodes sharing SSO sessions in the lab's memcached.

While the store is down, this IdP answers with an error page, not the login form (as SimpleSAMLphp shows
"Cannot retrieve session data"): no returning user is asked for a password, every one is shown errors. That
costs a user its single sign-on as surely, so the verdict must not read ○ (issue 26, item 2).
"""

from __future__ import annotations

import json

import pytest
from pysaml2_cluster import ACCOUNTS, Pysaml2Cluster

from authbench.cli import main

from ports import PYSAML2_FAILOVER

PLAN = "at=1s stop memcached-a"  # down to the end of the cell (the run starts it again then)


@pytest.fixture(scope="module")
def cluster(lab, tmp_path_factory):
    memcached = (lab.host, lab.shared_port("memcached-a"))
    with Pysaml2Cluster(tmp_path_factory.mktemp("pysaml2-failover"), PYSAML2_FAILOVER, memcached) as idp:
        yield idp


def test_an_error_page_instead_of_sso_is_a_lost_session(lab, cluster, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))  # where the fault plan's memcached-a runs
    accounts = tmp_path / "accounts.csv"
    accounts.write_text("user,password\n" + "".join(f"{user},{password}\n" for user, password in ACCOUNTS.items()))
    try:
        code = main(["run", "--target", cluster.protected_url, "--accounts-csv", str(accounts), "--pattern", "3x6",
                     "--timeout", "2s", "--pace", "0.4s", "--reuse-session", "--fault", PLAN, "--results",
                     str(tmp_path), "--run-id", "f"])
    finally:
        from authbench_lab import lab as lab_api

        lab_api.start_component(lab.run_dir, "memcached-a")
    out = capsys.readouterr().out
    assert code == 0, out
    (cell,) = json.loads((tmp_path / "f" / "summary.json").read_text())["cells"]
    [stop] = cell["failover"]["faults"]
    assert (stop["logged_in_users"], stop["reauthenticated_users"], stop["failed_users"]) == (3, 0, 3), stop
    assert stop["test4"] == "×" and stop["recovery_s"] is None, stop
    assert "http status" in cell["summary"]["reasons"], cell["summary"]["reasons"]  # the IdP's error page
    assert "Test 4 × at=1s stop memcached-a: 3 of 3 logged-in users lost SSO (0 asked for their password again, " \
        "3 still shown errors)" in out
