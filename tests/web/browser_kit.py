"""What the Chromium tests share: `authbench web` as a process on the session lab, and Debian's Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from process_kit import end

CHROMIUM = "/usr/bin/chromium"  # Debian's package (deploy/setup-system.sh); Playwright downloads no browser
START_LIMIT = 60.0  # seconds for `authbench web` to answer
STEP_LIMIT_MS = 20_000  # any wait on a page but a whole run's


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 (loopback, our own server)
        return answer.read()


@contextmanager
def web_ui(lab_dir: Path, results: Path, port: int, log_path: Path,
           files_dir: Path | None = None) -> Iterator[str]:
    """`authbench web` on 127.0.0.1:`port` over `results`, the lab at `lab_dir` (and `--files-dir files_dir`); yields
    its base URL. The log must hold no traceback when it ends."""
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(lab_dir)}
    env.pop("AUTHBENCH_WEB_AUTH", None)
    files = ["--files-dir", str(files_dir)] if files_dir else []
    with log_path.open("w") as log:
        process = subprocess.Popen([sys.executable, "-m", "authbench", "web", "--web-port", str(port),
                                    "--results", str(results), *files], env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_LIMIT
        try:
            while True:
                try:
                    get(f"{base}/authbench/api/state")
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise AssertionError(f"authbench web did not start: {log_path.read_text()[-2000:]}") \
                            from None
                    time.sleep(0.2)
            yield base
        finally:
            end(process, grace=15)
    assert "Traceback" not in log_path.read_text()


def chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])


@contextmanager
def ui_page(base: str, height: int = 1000, step_ms: int = STEP_LIMIT_MS) -> Iterator[tuple[Any, Any]]:
    """(browser, page): Chromium on the UI's run page, every wait on it bounded by `step_ms`; closed at the end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": height})
            page.set_default_timeout(step_ms)
            page.goto(f"{base}/authbench/")
            yield browser, page
        finally:
            browser.close()


def start_declined(page, timeout_ms: int = STEP_LIMIT_MS) -> str:
    """Click Start on a plan long enough to be confirmed first, decline, and return what the page asked."""
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#start")
    deadline = time.monotonic() + timeout_ms / 1000
    while not asked:
        assert time.monotonic() < deadline, "Start asked for no confirmation"
        page.wait_for_timeout(50)
    return asked[0]
