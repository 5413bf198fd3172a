"""Account sources: one account, CSV, template; passwords never in a repr."""

from __future__ import annotations

import pytest

from authbench.accounts import Account, AccountPicker, AccountsError, from_csv, from_template


def test_template_pads_like_its_bounds():
    accounts = from_template("user{000..999}", "pw-{user}")
    assert len(accounts) == 1000
    assert accounts[42] == Account("user042", "pw-user042")


@pytest.mark.parametrize("bad", ["user", "user{5..1}", "u{1..2}{3..4}"])
def test_bad_templates(bad):
    with pytest.raises(AccountsError, match="template"):
        from_template(bad, "pw-{user}")


def test_password_rule_needs_the_user():
    with pytest.raises(AccountsError, match=r"\{user\}"):
        from_template("user{0..9}", "secret")


def test_csv_with_and_without_header(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("user,password\nalice,s3cret\nbob,pa,ss\n\n")
    assert [a.username for a in from_csv(path)] == ["alice", "bob"]
    path.write_text("carol,x\n")
    assert from_csv(path)[0].password == "x"


def test_unreadable_and_malformed_csv(tmp_path):
    with pytest.raises(AccountsError, match="cannot read accounts file"):
        from_csv(tmp_path / "missing.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("onlyuser\n")
    with pytest.raises(AccountsError, match="row 1"):
        from_csv(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text("user,password\n")
    with pytest.raises(AccountsError, match="no accounts"):
        from_csv(empty)


def test_password_not_in_repr():
    assert "pw-user001" not in repr(Account("user001", "pw-user001"))


def test_sequential_and_seeded_random_order():
    accounts = from_template("u{0..4}", "p{user}")
    sequential = AccountPicker(accounts)
    assert [sequential.pick().username for _ in range(7)] == ["u0", "u1", "u2", "u3", "u4", "u0", "u1"]
    first = [AccountPicker(accounts, "random", seed=3).pick().username for _ in range(1)]
    again = [AccountPicker(accounts, "random", seed=3).pick().username for _ in range(1)]
    assert first == again
    with pytest.raises(AccountsError, match="order"):
        AccountPicker(accounts, "shuffled")
