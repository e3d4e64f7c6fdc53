"""Headless Chromium for the web pages' tests: Debian's browser driven by Playwright.

Playwright brings its own driver but no browser here (``playwright install`` downloads one,
and the network is closed): Debian's ``/usr/bin/chromium`` is launched by path with the flags
that keep it from reaching for the network (without them it hangs on refused connections).
Without Chromium the tests skip, unless ``JACKPOT_REQUIRE_CHROMIUM=1`` (set by .ci/run): CI
can never skip them silently. Screenshots go to :data:`ARTIFACTS` (git-ignored; CI may keep it).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
"""Where the browser tests save their screenshots."""
CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
REQUIRED = os.environ.get("JACKPOT_REQUIRE_CHROMIUM") == "1"  # set by .ci/run
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not REQUIRED,
    reason="chromium not on PATH (Debian: apt-get install chromium; make and .ci/run install it)",
)


@contextmanager
def chromium() -> Iterator[Any]:
    """A Playwright browser: Debian's Chromium, headless, with a fresh profile."""
    from playwright.sync_api import sync_playwright

    if CHROMIUM is None:
        raise AssertionError("JACKPOT_REQUIRE_CHROMIUM=1 but chromium is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, timeout=60_000
        )
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page: Any, name: str) -> Path:
    """Save a screenshot of ``page`` as ``test-artifacts/<name>.png``."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def eventually(check: Callable[[], Any], what: str, timeout_s: float = 15.0) -> Any:
    """Poll ``check`` until it returns something truthy (bounded by a deadline, not a sleep
    of its own length); its last value otherwise fails the test, naming ``what``."""
    deadline = time.monotonic() + timeout_s
    value: Any = None
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout_s}s (last seen: {value!r})")
