"""authrate's generators and templates: what they produce, and a clear message for every malformed one."""

from __future__ import annotations

import pytest

from authbench.authrate.templates import Arguments, TemplateError, expand_charset, parse_generator, parse_template


def draws(specs: list[str], seed: int | None, n: int = 20) -> list[list[str]]:
    arguments = Arguments(specs, seed)
    return [arguments.next() for _ in range(n)]


def test_inc_counts_through_and_wraps():
    assert [row[0] for row in draws(["inc(3,5)"], None, 7)] == ["3", "4", "5", "3", "4", "5", "3"]


def test_rand_stays_in_range_and_reaches_both_ends():
    values = {int(row[0]) for row in draws(["rand(0,3)"], 1, 200)}
    assert values == {0, 1, 2, 3}


def test_a_seed_reproduces_every_generator(tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("alice\nbob\ncarol\n")
    specs = ["rand(0,2000)", f"rand({names})", f"inc({names})", "randstr(8,[a-f]x)", "static"]
    assert draws(specs, 42) == draws(specs, 42)
    assert draws(specs, 42) != draws(specs, 43)
    first = draws(specs, 7, 4)
    assert [row[2] for row in first] == ["alice", "bob", "carol", "alice"]
    assert all(row[4] == "static" and len(row[3]) == 8 and set(row[3]) <= set("abcdefx") for row in first)


def test_randstr_default_charset_and_ranges():
    assert expand_charset("s", "[A-C][0-1]-_") == "ABC01-_"
    value = parse_generator("randstr(30)")(__import__("random").Random(1))
    assert len(value) == 30 and value.isalnum()


def test_templates_fill_in_order_and_by_number():
    assert parse_template("uid=user.{},ou={}", "-D", 2).fill(["7", "people"]) == "uid=user.7,ou=people"
    assert parse_template("{2}", "-D", 2).fill(["7", "uid=x"]) == "uid=x"
    assert parse_template("no fields", "-D", 0).fill([]) == "no fields"


@pytest.mark.parametrize(("spec", "message"), [
    ("rand(5)", "give rand(min,max) or rand(file)"),
    ("inc(3,1)", "min 3 is greater than max 1"),
    ("randstr(x)", "'x' is not an integer"),
    ("randstr(0)", "at least 1"),
    ("rand(1,2", "unbalanced parentheses"),
    ("rand(1,2,3)", "give rand(min,max)"),
    ("randstr(4,[z-a])", "runs backwards"),
    ("randstr(4,[ab)", "write ranges as [a-z]"),
    ("inc()", "give inc(min,max) or inc(file)"),
])
def test_malformed_generators_say_what_is_wrong(spec, message):
    with pytest.raises(TemplateError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        parse_generator(spec)


@pytest.mark.parametrize(("template", "arguments", "message"), [
    ("uid=user.{", 1, "unbalanced"),
    ("uid=user.}", 1, "unbalanced"),
    ("uid={}}", 1, "unbalanced"),
    ("uid={x}", 1, "unbalanced or malformed"),
    ("uid={3}", 2, "uses argument 3 but there are only 2"),
    ("uid={}", 0, "uses argument 1 but there are only 0"),
    ("uid={0}", 1, "numbered from"),
])
def test_malformed_templates_say_what_is_wrong(template, arguments, message):
    with pytest.raises(TemplateError, match=message):
        parse_template(template, "-D", arguments)
