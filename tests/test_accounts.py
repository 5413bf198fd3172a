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


def test_workers_shares_are_disjoint_and_together_every_account():
    """Two workers of a 10-user pattern (users 0-3 and 4-9): each picks only its own accounts, in order, and their
    shares cover all 25; a worker with no account left in its share (more users than accounts) takes them all."""
    accounts = from_template("u{00..24}", "p-{user}")
    first, second = AccountPicker(accounts), AccountPicker(accounts, order="random", seed=1)
    first.share(range(4), 10)
    second.share(range(4, 10), 10)
    mine = [first.pick().username for _ in range(13)]
    assert mine[:6] == ["u00", "u01", "u02", "u03", "u10", "u11"] and mine[12] == "u00"
    theirs = {second.pick().username for _ in range(500)}
    assert not set(mine) & theirs and len(set(mine) | theirs) == 25
    few = AccountPicker(from_template("u{0..2}", "p-{user}"))
    few.share([7, 8], 10)
    assert {few.pick().username for _ in range(3)} == {"u0", "u1", "u2"}
