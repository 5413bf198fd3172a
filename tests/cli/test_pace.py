"""--pace (issue 25, item 7): no pace is waited after a user's last journey, and a pace longer than the cell
time limit is refused in one line before any load."""

from __future__ import annotations

import time

from authbench.cli import main
from authbench.patterns import Pattern
from authbench.phases import PhaseController
from authbench.results.sample import MEASURED

WELL_UNDER_PACE_S = 4.0  # a 1x1 run (preflight, one journey) against the session lab takes about a second


def run(args: list[str], capsys) -> tuple[int, float, str, str]:
    began = time.monotonic()
    code = main(["run", "--target", "lab:stateless", *args])
    took = time.monotonic() - began
    captured = capsys.readouterr()
    return code, took, captured.out, captured.err


def test_a_user_does_not_wait_its_pace_after_its_last_journey(lab, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    code, took, out, _ = run(["--pattern", "1x1", "--pace", "5s", "--results", str(tmp_path)], capsys)
    assert code == 0, out
    assert "1x1 #1: 1 tests, 0 errors" in out
    assert took < WELL_UNDER_PACE_S, took


def test_a_week_long_pace_is_refused_in_one_line_and_within_the_limit_ends_with_its_journeys(lab, monkeypatch,
                                                                                             tmp_path, capsys):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    code, took, out, err = run(["--pattern", "1x1", "--pace", "168h", "--results", str(tmp_path)], capsys)
    assert code == 2 and out == "" and not list(tmp_path.iterdir())
    assert err.strip().splitlines() == ["authbench: error: --pace 168h: 604800 s is longer than the cell time limit "
                                        "3600 s, so a user would still be waiting when its cell is cut; shorten "
                                        "--pace or raise --cell-time-limit"]
    code, took, out, _ = run(["--pattern", "1x1", "--pace", "168h", "--cell-time-limit", "168h", "--results",
                              str(tmp_path)], capsys)
    assert code == 0 and took < WELL_UNDER_PACE_S, (took, out)


def test_the_controller_tells_a_user_it_has_no_journey_left():
    controller = PhaseController(Pattern(2, 2), 1, warmup=0.0)
    user = controller.join()
    assert controller.has_ticket(user)
    for _ in range(2):
        assert controller.ticket(user).phase == MEASURED
    assert not controller.has_ticket(user) and controller.ticket(user) is None
    assert controller.has_ticket(controller.join()) and not controller.has_ticket(-1)
