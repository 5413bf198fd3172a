"""`authbench privacyidea-bench` on the extras lab: the blog's method at a small N, its cache really filling."""

from __future__ import annotations

import json
import sqlite3

from authbench.cli import main
from authbench_lab.privacyidea import server

USERS = 8


def cached_users(config) -> set[str]:
    with sqlite3.connect(server.root(config) / "privacyidea.sqlite") as db:
        return {row[0] for row in db.execute("SELECT username FROM usercache")}


def test_cache_off_cold_and_warm_each_a_run_with_medians_and_a_plot(extras_env, tmp_path, capsys, monkeypatch):
    """One bench (each restarts privacyIDEA twice: the slow part), and what makes its warm pass warm: after the
    cache-on run, the users it checked are in privacyIDEA's cache (seen before the lab's setting is put back)."""
    from authbench.cli import pi_bench

    seen: list[set[str]] = []
    restore = pi_bench._set_cache

    def spy(lab_api, srv, config) -> None:
        if config.privacyidea_cache == 0 and seen == [] and (tmp_path / "b" / "cache-on").exists():
            seen.append(cached_users(config))
        restore(lab_api, srv, config)

    monkeypatch.setattr(pi_bench, "_set_cache", spy)
    code = main(["privacyidea-bench", "--users", str(USERS), "--results", str(tmp_path), "--run-id", "b"])
    out = capsys.readouterr().out
    assert code == 0, out
    folder = tmp_path / "b"
    result = json.loads((folder / "bench.json").read_text())
    assert [p["scenario"] for p in result["passes"]] == ["cache off, first pass", "cache off, second pass",
                                                         "cache on, cold (first pass)", "cache on, warm (second pass)"]
    assert all(p["checks"] == USERS and p["median_ms"] > 0 for p in result["passes"])
    for run in ("cache-off", "cache-on"):  # ordinary run folders: 2N checks, none failed
        cell = json.loads((folder / run / "summary.json").read_text())["cells"][0]["summary"]
        assert cell["tests"] == 2 * USERS and cell["errors"] == 0
    assert (folder / "by-request.png").read_bytes().startswith(b"\x89PNG")
    assert "| cache on, warm (second pass) | 8 |" in (folder / "table.md").read_text()
    assert seen and {f"user00{i}" for i in range(USERS)} <= seen[0]  # the cold pass filled the cache
    assert not cached_users(extras_env)  # the lab's own setting (off) is back, its cache empty


def test_bad_input_is_one_line(extras_env, tmp_path, capsys):
    for args, message in ((["--users", "5000"], "--users 5000: give 1..50"),
                          (["--cache-seconds", "0"], "--cache-seconds must be at least 1"),
                          (["--run-id", "../x"], "--run-id '../x'")):
        assert main(["privacyidea-bench", *args, "--results", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
