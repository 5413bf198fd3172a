"""authbench's page and JSON endpoints on Locust's web UI, under /authbench/.

Locust's own UI stays at / with its charts and tables; its start dialog is turned into a pointer to
ours, since a free Locust run has none of a plan's exactness (patterns, warm-up, repetitions).
Every route goes through Locust's `auth_required_if_enabled`, so `--web-login` guards them all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Response, jsonify, redirect, request, send_file, send_from_directory

from ..errors import AuthbenchError
from ..names import is_safe_name
from ..openmodel.rates import Arrivals, Search, format_rate
from ..results.failures import FAILURES_DIR
from . import guard as guards
from . import locust_page, runs
from .campaign import campaign_view, report_path
from .fields import name_fields
from .launch import DEFAULT_CELL_TIME_LIMIT, Launcher
from .live import LiveRun

PREFIX = "/authbench"
STATIC_DIR = Path(__file__).parent / "static"
_SEARCH = Search()  # the capacity search's knobs as `authbench run` defaults them (cli/openmodel.py, tested)
DEFAULT_FORM = {"pattern": "2x1000,10x200,20x200", "warmup": "60s", "repeat": "3",
                "cell_time_limit": DEFAULT_CELL_TIME_LIMIT, "start_rate": format_rate(_SEARCH.start),
                "max_rate": format_rate(_SEARCH.max_rate), "growth": f"{_SEARCH.growth:g}",
                "precision": f"{_SEARCH.precision * 100:g}%", "step_duration": f"{_SEARCH.hold:g}s",
                "step_warmup": f"{_SEARCH.warmup:g}s", "max_users": str(Arrivals().max_users)}
COMPARE_DIR = ".compare"  # under --results: reports comparing two runs (hidden: not a run itself)
CONFIRM_AFTER_S = 180.0  # plans estimated longer than this are started only after the operator confirms
log = logging.getLogger(__name__)


def lab_targets(lab_dir: str | None) -> list[str]:
    """What the embedded lab running in `lab_dir` offers as `lab:NAME` targets: its clusters first (SAML SSO),
    then its directory (`ldap`, `ldaps`) and its optional servers (`postgres`, `privacyidea`); or none."""
    from ..embedded_lab import offered_targets

    return offered_targets(lab_dir)


def install(environment, results: Path, prepare: Callable[[dict[str, str]], Any],
            allowed_hosts: tuple[str, ...] = (), lab_dir: str | None = None,
            plan_of: Callable[[dict[str, str]], Any] | None = None) -> Launcher:
    """Add the routes to `environment.web_ui` and listen to the run's events; the launcher they drive.

    `prepare(form)` turns the start form into a checked run (cli.web_form.form_preparer), `plan_of(form)` into
    its plan alone (patterns or arrival rates, for the estimate); `lab_dir` is where the embedded lab whose
    clusters the form offers runs.
    """

    web_ui = environment.web_ui
    app = web_ui.app
    guards.install(app, allowed_hosts)
    guard = guards.protected(web_ui)
    live = LiveRun()
    live.attach(environment.authbench.events, environment.authbench)
    launcher = Launcher(environment, live, results, prepare)
    locust_page.adapt(environment, launcher, live, guard, PREFIX)

    @app.route(f"{PREFIX}")
    def to_page() -> Response:
        return redirect(f"{PREFIX}/")

    @app.route(f"{PREFIX}/")
    @guard
    def page() -> Response:
        return send_from_directory(STATIC_DIR, "index.html")

    @app.route(f"{PREFIX}/static/<path:name>")
    @guard
    def static_file(name: str) -> Response:
        return send_from_directory(STATIC_DIR, name)

    @app.route(f"{PREFIX}/api/state")
    @guard
    def state() -> Response:
        return jsonify({**live.snapshot(), "busy": launcher.running, "lab_backends": lab_targets(lab_dir),
                        "login": bool(web_ui.web_login),
                        "defaults": DEFAULT_FORM, "results": str(results)})

    @app.route(f"{PREFIX}/api/timeline")
    @guard
    def timeline() -> Response:
        return jsonify(live.timeline_view())

    @app.route(f"{PREFIX}/api/start", methods=["POST"])
    @guard
    def start() -> tuple[Response, int]:
        refused = _foreign(request)
        if refused:
            return refused
        form: Any = request.get_json(silent=True)
        if not isinstance(form, dict):
            return jsonify({"ok": False, "message": "send the form as a JSON object"}), 400
        try:
            run_id = launcher.start({k: str(v) for k, v in form.items()})
        except AuthbenchError as exc:  # a failed preflight brings its trail, hop by hop
            return jsonify({"ok": False, "message": " ".join(str(exc).split()), "trail": exc.details}), 400
        except Exception as exc:  # e.g. a damaged lab.json: one line on the page, the traceback in the log
            log.exception("starting a run from the web UI failed")
            return jsonify({"ok": False, "message": f"unexpected {type(exc).__name__}: "
                            + " ".join(str(exc).split())}), 500
        return jsonify({"ok": True, "run_id": run_id}), 200

    @app.route(f"{PREFIX}/api/estimate", methods=["POST"])
    @guard
    def estimate() -> tuple[Response, int]:
        """How long the form's plan would take (the --dry-run estimate; a capacity search's longest), for a
        confirmation before long plans."""
        from ..cluster.campaign import estimate_plan_s, format_duration
        from ..openmodel.capacity import estimate_s
        from ..patterns import PlanError, parse_plan

        form: Any = request.get_json(silent=True) or {}
        try:
            if plan_of is not None:
                plan = plan_of({str(k): str(v) for k, v in form.items()} if isinstance(form, dict) else {})
            else:
                plan = parse_plan(str(form.get("pattern") or ""), str(form.get("warmup") or "0"),
                                  int(str(form.get("repeat") or "1")))
        except (AuthbenchError, PlanError, ValueError) as exc:
            return jsonify({"ok": False, "message": name_fields(" ".join(str(exc).split()))}), 400
        search = getattr(plan, "search", None)
        seconds = estimate_plan_s(plan) + (estimate_s(search) if search is not None else 0.0)
        text = format_duration(seconds)
        return jsonify({"ok": True, "seconds": seconds, "text": text, "bound": search is not None,
                        "phrase": f"at most {text}" if search is not None else f"about {text}",
                        "confirm": seconds > CONFIRM_AFTER_S}), 200

    @app.route(f"{PREFIX}/api/stop", methods=["POST"])
    @guard
    def stop() -> tuple[Response, int]:
        return _foreign(request) or (jsonify({"ok": launcher.stop()}), 200)

    @app.route(f"{PREFIX}/api/campaign")
    @guard
    def campaign() -> Response:
        return jsonify(campaign_view(results))

    @app.route(f"{PREFIX}/report/<name>")
    @guard
    def report(name: str) -> tuple[Response, int] | Response:
        path = report_path(results, name)
        if path is None:
            return jsonify({"ok": False, "message": f"the last campaign has no {name}"}), 404
        return send_file(path, as_attachment=True, download_name=f"{path.parent.name}-{name}")

    @app.route(f"{PREFIX}/api/runs")
    @guard
    def runs_list() -> Response:
        return jsonify({"runs": runs.list_runs(results)})

    @app.route(f"{PREFIX}/api/runs/<run_id>/report", methods=["POST"])
    @guard
    def runs_report(run_id: str) -> tuple[Response, int]:
        """Build (or rebuild) a run's or campaign's report on demand."""
        from ..report import ReportError

        refused = _foreign(request)
        if refused:
            return refused
        try:
            path = runs.build_report(results, run_id)
        except ReportError as exc:
            return jsonify({"ok": False, "message": str(exc)}), 400
        if path is None:
            return jsonify({"ok": False, "message": f"no run or campaign {run_id!r} under {results}"}), 404
        return jsonify({"ok": True, "url": f"runs/{run_id}/report.html"}), 200

    @app.route(f"{PREFIX}/runs/<run_id>/report.html")
    @guard
    def runs_report_file(run_id: str) -> tuple[Response, int] | Response:
        """A run's report.html, written first when it has none or its results changed since (the live page's
        link at a run's end)."""
        from ..report import ReportError

        folder = runs.run_folder(results, run_id)
        if folder is None:
            return jsonify({"ok": False, "message": f"{run_id} has no report yet"}), 404
        if runs.report_stale(folder):
            try:
                runs.build_report(results, run_id)
            except ReportError as exc:
                return jsonify({"ok": False, "message": str(exc)}), 400
        return send_file(folder / "report.html", mimetype="text/html", max_age=0)

    @app.route(f"{PREFIX}/compare")
    @guard
    def runs_compare() -> tuple[Response, int] | Response:
        """Two runs side by side in one report (a download)."""
        from ..report import ReportError

        first, second = request.args.get("a", ""), request.args.get("b", "")
        out = results / COMPARE_DIR / f"{first}--{second}"
        try:
            if runs.run_folder(results, first) is None or runs.run_folder(results, second) is None:
                raise ReportError(f"give two runs under {results}: ?a=RUN&b=RUN")
            out.mkdir(parents=True, exist_ok=True)
            path = runs.compare_report(results, first, second, out)
        except ReportError as exc:
            return jsonify({"ok": False, "message": str(exc)}), 400
        if path is None:
            return jsonify({"ok": False, "message": "give two different runs (not campaigns)"}), 400
        return send_file(path, as_attachment=True, download_name=f"compare-{first}-{second}.html")

    @app.route(f"{PREFIX}/failures/<run_id>/<name>")  # the live page's links
    @app.route(f"{PREFIX}/runs/<run_id>/failures/<name>")  # a run's report.html, served below, links these …
    @app.route(f"{PREFIX}/runs/<run_id>/runs/<member>/failures/<name>")  # … and a campaign's, its runs' ones
    @guard
    def failure_example(run_id: str, name: str, member: str = "") -> tuple[Response, int] | Response:
        """A kept failure's trail or page, always as plain text: a foreign SP's page never runs here."""
        names = [run_id, name, *([member] if member else [])]
        folder = results / run_id / (f"runs/{member}" if member else "") / FAILURES_DIR
        if not (all(is_safe_name(n) for n in names) and (folder / name).is_file()):
            return jsonify({"ok": False, "message": f"no failure example {'/'.join(names)}"}), 404
        response = send_from_directory(folder, name, mimetype="text/plain")
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = "sandbox"
        return response

    return launcher


def _foreign(req) -> tuple[Response, int] | None:
    """Refuse a state-changing request another web site's page could have sent (Locust allows any origin).

    A JSON body cannot come from a plain cross-site form, and a cross-site fetch carries its Origin (every
    state-changing route is checked so, guard.install; here again, so this route never depends on the order).
    """
    if not req.is_json:
        return jsonify({"ok": False, "message": "send the request as JSON"}), 400
    foreign = guards.foreign_origin(req)
    if foreign is not None:
        return jsonify({"ok": False, "message": f"requests from {foreign} are refused"}), guards.FORBIDDEN
    return None
