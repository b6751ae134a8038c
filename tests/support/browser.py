"""Open a generated report in a real headless Chromium (system browser, driven over CDP)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest


def chromium_path() -> str:
    for candidate in (os.environ.get("REPORTGEN_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    if os.environ.get("REPORTGEN_REQUIRE_BROWSER") == "1":
        pytest.fail("no Chromium found but REPORTGEN_REQUIRE_BROWSER=1 (scripts/setup.sh --test installs it)")
    pytest.skip("no Chromium installed (scripts/setup.sh --test installs it)")


@dataclass
class PageVisit:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)  # alert/confirm/prompt opened by the page
    dom: dict = field(default_factory=dict)


OPEN_ALL_DETAILS = "() => { document.querySelectorAll('details').forEach(d => { d.open = true; }); return {}; }"


def visit(html_path: Path, *, javascript: bool = True, screenshot: Path | None = None,
          probe: str | list[str] = "() => ({})", width: int = 1400, height: int = 1000,
          full_page: bool = True) -> PageVisit:
    """Load the report; record console errors, page errors, every request; evaluate ``probe``.

    A list of probes is evaluated in turn with 1.5 s between them (charts inside a <details> opened
    by one probe are drawn before the next); their results are merged. Probes must not wait on
    timers themselves: with JavaScript off, the page's timers never fire."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("REPORTGEN_REQUIRE_BROWSER") == "1":
            pytest.fail("playwright is not installed (pip install -e '.[test]')")
        pytest.skip("playwright is not installed")
    result = PageVisit()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(),
                                     args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                           "--disable-background-networking"])
        context = browser.new_context(java_script_enabled=javascript, viewport={"width": width, "height": height})
        page = context.new_page()
        page.on("console", lambda msg: msg.type == "error" and result.console_errors.append(msg.text))
        page.on("pageerror", lambda err: result.console_errors.append(f"pageerror: {err}"))
        page.on("request", lambda req: result.requests.append(req.url))
        page.on("dialog", lambda dialog: (result.dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(html_path.resolve().as_uri())
        page.wait_for_load_state("load")
        if javascript and page.query_selector("#plotly-js"):  # plotly.js is inflated, then the charts drawn
            page.wait_for_function("() => document.documentElement.getAttribute('data-charts') === 'ready'",
                                   timeout=30_000)
        page.wait_for_timeout(300)
        probes = [probe] if isinstance(probe, str) else list(probe)
        merged: dict = {}
        for index, script in enumerate(probes):
            if index:
                page.wait_for_timeout(1500)
            found = page.evaluate(script)
            if not isinstance(found, dict):
                merged = found
            else:
                merged.update(found)
        result.dom = merged
        if screenshot:
            page.screenshot(path=str(screenshot), full_page=full_page)
        browser.close()
    return result
