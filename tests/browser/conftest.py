"""Real headless Chromium for page tests (Playwright driving the Debian ``chromium`` binary).

``browser`` (session)
    A Playwright ``Browser`` on ``/usr/bin/chromium`` (``CHROMIUM_PATH`` overrides it);
    ``playwright install`` cannot download browsers here, so tests use the system one.
``browser_context`` / ``page`` (function)
    A fresh context (own cookies and storage) and a page in it, closed after the test.
``login`` (function)
    ``login(page, live_server, username, password)``: signs in through the real login form.

Every test in this directory is marked ``browser`` automatically. Pages are served by
pytest-django's ``live_server`` (a real threaded HTTP server on the test database).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; Django then refuses ORM calls
# from that thread unless told that this is a plain synchronous test process.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-first-run",
]


def _chromium_path() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail(
            f"Chromium not found at {path}: install the Debian packages "
            "`chromium chromium-driver` (.ci/run does) or set CHROMIUM_PATH"
        )
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser() -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=_chromium_path(), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def browser_context(browser) -> Iterator:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def page(browser_context) -> Iterator:
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    yield page


@pytest.fixture
def login():
    def _login(page, live_server, username: str, password: str) -> None:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=login]", username)
        page.fill("input[name=password]", password)
        page.locator("form [type=submit]").first.click()
        page.wait_for_load_state()
        assert "/accounts/login/" not in page.url, f"login failed for {username}"

    return _login
