"""`authbench run --rate/--levels` and `authbench capacity` against the session lab, SAML and LDAP, and their
bad input (one line, exit 2) in one table."""

from __future__ import annotations

import json

import pytest

from authbench.cli import main
from authbench.report import write_report
from authbench.results.recorder import read_samples


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


def cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def measured(run_dir) -> list:
    return [s for s in read_samples(run_dir / "samples.csv") if s.phase == "measured"]


@pytest.mark.parametrize(("target", "rate", "duration", "count"), [
    ("lab:stateless", "20/s", "3s", 60), ("lab:ldap", "1200/min", "2s", 40)])
def test_a_rate_run_hits_its_count(lab_env, tmp_path, capsys, target, rate, duration, count):
    code, out, _ = cli(["run", "--target", target, "--rate", rate, "--duration", duration, "--warmup", "0.5s",
                        "--results", str(tmp_path), "--run-id", "r"], capsys)
    assert code == 0, out
    document = json.loads((tmp_path / "r" / "summary.json").read_text())
    cell = document["cells"][0]
    assert cell["summary"]["tests"] == cell["open"]["planned"] == cell["open"]["started"] == count
    assert cell["summary"]["errors"] == 0
    assert sum(s.phase == "warmup" for s in read_samples(tmp_path / "r" / "samples.csv")) == 10
    assert document["plan"]["model"] == "open" and document["plan"]["levels"][0]["rate"] == 20.0
    samples = measured(tmp_path / "r")
    assert len(samples) == count and sorted(s.iteration for s in samples) == list(range(10, 10 + count))
    starts = sorted(s.start for s in samples)  # intended starts, evenly spaced whatever the server did
    assert max(b - a for a, b in zip(starts, starts[1:], strict=False)) == pytest.approx(1 / 20, abs=1e-5)
    assert "target 20/s, achieved" in out and "sustained" in out


def test_levels_repeated_with_their_own_warmups(lab_env, tmp_path, capsys):
    code, out, _ = cli(["run", "--target", "lab:ldap", "--levels", "typical=10/s:1s,peak=30/s:1s:0.5s",
                        "--repeat", "2", "--slo", "p99<5s,errors<1%", "--results", str(tmp_path), "--run-id", "l"],
                       capsys)
    assert code == 0, out
    document = json.loads((tmp_path / "l" / "summary.json").read_text())
    assert [(c["pattern"], c["repetition"], c["summary"]["tests"]) for c in document["cells"]] == [
        ("typical", 1, 10), ("typical", 2, 10), ("peak", 1, 30), ("peak", 2, 30)]
    warm = [(s.pattern, s.repetition) for s in read_samples(tmp_path / "l" / "samples.csv") if s.phase == "warmup"]
    assert sorted(set(warm)) == [("peak", 1), ("peak", 2)] and len(warm) == 30  # typical has no warm-up
    assert set(document["averages"]) == {"typical", "peak"}
    assert all(c["open"]["slo_met"] and c["open"]["slo"] == "p99<5000ms,errors<1%" for c in document["cells"])
    assert "typical average" in out and "peak #2" in out


def test_poisson_arrivals_with_a_seed_are_reproducible(lab_env, tmp_path, capsys):
    offsets = []
    for run_id in ("p1", "p2"):
        code, out, _ = cli(["run", "--target", "lab:ldap", "--rate", "40/s", "--duration", "2s", "--arrivals",
                            "poisson", "--seed", "11", "--results", str(tmp_path), "--run-id", run_id], capsys)
        assert code == 0, out
        document = json.loads((tmp_path / run_id / "summary.json").read_text())
        assert document["plan"]["seed"] == 11 and document["cells"][0]["open"]["arrivals"] == "poisson"
        starts = sorted(s.start for s in measured(tmp_path / run_id))
        offsets.append([round(start - starts[0], 4) for start in starts])
    assert offsets[0] == offsets[1] and 40 <= len(offsets[0]) <= 120  # 80 expected, 4.5 standard deviations
    assert len({b - a for a, b in zip(offsets[0], offsets[0][1:], strict=False)}) > 10  # not evenly spaced


def test_capacity_search_on_the_lab_converges(lab_env, tmp_path, capsys):
    # Two users and no queue: once the journeys of two users cannot keep up, starts are dropped and the step fails.
    code, out, _ = cli(["capacity", "--target", "lab:ldap", "--slo", "p99<2s,errors<1%", "--max-users", "2",
                        "--queue-for", "0", "--start-rate", "25/s", "--growth", "4", "--precision", "10%",
                        "--max-rate", "6400/s", "--step-duration", "1s", "--step-warmup", "0.2s",
                        "--results", str(tmp_path), "--run-id", "c"], capsys)
    assert code == 0, out
    document = json.loads((tmp_path / "c" / "summary.json").read_text())
    found = document["capacity"]
    assert found["first_fail"] is not None and found["last_pass"] < found["first_fail"]
    confirms = [s for s in found["steps"] if s["stage"] == "confirm"]
    assert confirms[-1]["rate"] == found["last_pass"] and confirms[-1]["passed"] == found["confirmed"]
    assert any(s["rate"] == found["first_fail"] and not s["passed"] for s in found["steps"])
    assert any(s["rate"] == found["last_pass"] and s["passed"] and s["stage"] != "confirm" for s in found["steps"])
    # Within the precision, unless the steps ran out or a confirmation failed (then the next lower rate counts).
    assert found["precision_reached"] or found["steps_exhausted"] or not all(c["passed"] for c in confirms)
    assert not found["precision_reached"] or (found["first_fail"] - found["last_pass"]) / found["last_pass"] <= 0.10
    cells = {c["pattern"]: c for c in document["cells"]}
    assert found["step_labels"] == [c["pattern"] for c in document["cells"]]  # every step kept, in order
    for step, label in zip(found["steps"], found["step_labels"], strict=True):
        record = cells[label]["open"]
        assert record["target_rate"] == pytest.approx(step["rate"])
        assert step["passed"] == (record["sustained"] and record["slo_met"])
    assert "maximum capacity:" in out
    write_report(tmp_path / "c")
    report = (tmp_path / "c" / "report.md").read_text()
    assert ": capacity search**" in report and (tmp_path / "c" / "report-capacity.png").stat().st_size > 0
    assert report.count("| FAIL |") == sum(not s["passed"] for s in found["steps"])


@pytest.mark.parametrize(("args", "message"), [
    (["--rate", "100", "--duration", "1m"], "rate '100' is not a number per unit"),
    (["--rate", "100/d", "--duration", "1m"], "unknown unit 'd'"),
    (["--rate", "100/s"], "--rate and --duration go together"),
    (["--rate", "100/s", "--duration", "0s"], "--duration must be more than 0"),
    (["--rate", "1/s", "--duration", "1m", "--pattern", "2x3"], "not both"),
    (["--rate", "1/s", "--duration", "1m", "--levels", "a=1/s:1m"], "not both"),
    (["--levels", "typical=20/s"], "NAME=RATE:DURATION"),
    (["--levels", "max,a=1/s:1m", "--slo", "p99<1s"], "must be the last item"),
    (["--levels", "a=1/s:1m,max"], "needs --slo"),
    (["--levels", "a=1/s:1m", "--slo", "p99>1s"], "SLO term 'p99>1s'"),
    (["--levels", "a=1/s:1m", "--slo", "errors<1"], "in %"),
    (["--rate", "1/s", "--duration", "1m", "--max-users", "0"], "--max-users must be"),
    (["--rate", "1/s", "--duration", "1m", "--max-users", "many"], "not a whole number"),
    (["--rate", "1/s", "--duration", "1m", "--queue-for", "later"], "duration 'later'"),
    (["--levels", "max", "--slo", "p99<1s", "--precision", "90%"], "at most 50%"),
    (["--levels", "max", "--slo", "p99<1s", "--start-rate", "10/s", "--max-rate", "5/s"], "above --max-rate"),
    (["--levels", "max", "--slo", "p99<1s", "--growth", "1"], "--growth 1"),
], ids=lambda value: "_".join(value) if isinstance(value, list) else None)
@pytest.mark.parametrize("command", ["run", "capacity"])
def test_bad_input_gives_one_line_and_exit_2(tmp_path, capsys, command, args, message):
    code, _, err = cli([command, "--target", "https://127.0.0.1:9/secure/", "--results", str(tmp_path), *args],
                       capsys)
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err


def test_capacity_without_slo(tmp_path, capsys):
    code, _, err = cli(["capacity", "--target", "lab:ldap", "--results", str(tmp_path)], capsys)
    assert code == 2 and "needs --slo" in err and err.count("\n") == 1


def test_compare_backends_at_equal_arrival_rates(lab, tmp_path, capsys):
    code, out, _ = cli(["compare", "--lab-dir", str(lab.run_dir), "--backends", "stateless,local", "--levels",
                        "typical=10/s:1s,peak=20/s:1s", "--warmup", "0.3s", "--repeat", "1", "--results",
                        str(tmp_path), "--campaign-id", "c"], capsys)
    assert code == 0, out
    for backend in ("stateless", "local"):
        run = json.loads((tmp_path / "c" / "runs" / backend / "summary.json").read_text())
        assert [(c["pattern"], c["open"]["planned"], c["summary"]["tests"]) for c in run["cells"]] == [
            ("typical", 10, 10), ("peak", 20, 20)]
        assert run["cells"][1]["resources"]["components"]["idp-a"]["cpu_s"] >= 0  # sampled per level
    report = (tmp_path / "c" / "report.md").read_text()
    assert "**Load levels**" in report and "| local | peak #1 | 20 |" in report


def test_a_rate_split_across_two_workers_keeps_every_slot_once(lab_env, tmp_path, capsys):
    code, out, _ = cli(["run", "--target", "lab:stateless", "--rate", "20/s", "--duration", "2s", "--warmup", "0.5s",
                        "--workers", "2", "--results", str(tmp_path), "--run-id", "d"], capsys)
    assert code == 0, out
    cell = json.loads((tmp_path / "d" / "summary.json").read_text())["cells"][0]
    assert cell["summary"]["tests"] == cell["open"]["planned"] == cell["open"]["started"] == 40
    # Locust's step statistics from both workers, the warm-up's 10 journeys left out: Locust resets its statistics
    # when the measured phase begins, so on a busy machine a warm-up journey still under way then adds its last
    # steps (at most the 10 warm-up journeys' worth), never a whole warm-up.
    assert all(40 <= step["requests"] < 50 for step in cell["steps"].values()), cell["steps"]
    assert "degraded" not in cell and cell["open"]["service_ms"]["p50"] is not None  # histograms merged
    assert sorted(s.iteration for s in measured(tmp_path / "d")) == list(range(10, 50))  # each slot by one worker
    assert "started 2 worker processes" in out
