"""The browser infrastructure itself: Chromium renders our pages and signs a user in."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db(transaction=True)


def test_home_page_renders_and_login_works(live_server, page, login):
    get_user_model().objects.create_user("carol", password="carol-pass")
    page.goto(live_server.url + "/")
    assert page.title()
    login(page, live_server, "carol", "carol-pass")
    assert page.js_errors == []


def test_wrong_password_stays_on_login_page(live_server, page):
    get_user_model().objects.create_user("dave", password="right")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=login]", "dave")
    page.fill("input[name=password]", "wrong")
    page.locator("form [type=submit]").first.click()
    # The answer is a new page: wait for its alert rather than read the old page at once.
    page.get_by_role("alert").wait_for(state="visible", timeout=10_000)
    assert "/accounts/login/" in page.url
