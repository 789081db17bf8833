"""The organizer console in real Chromium: the new task page's live preview draws a sample item
with the annotator page's own renderer (payload markup stays text) under the strict
Content-Security-Policy, the task is created from the page; on the organize pages a refused gold
upload (the wrong format, refused as it is received) lands on the Data section with one banner
as the first thing in view, focused, saying what is wrong with its line, whose link moves the
focus to the file input; a refused setting
likewise, the value typed kept; the sections' navigation marks the current one."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from leaderboard.models import Task

pytestmark = pytest.mark.django_db(transaction=True)

DANGER_RED = "rgb(164, 38, 44)"  # site.css: --danger, #a4262c
# Whether an element's box starts within the viewport the page shows.
IN_FIRST_VIEWPORT = (
    "e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }"
)
# The id of the first element of the page's content a reader sees (the site's header aside).
FIRST_VISIBLE_IN_MAIN = """() => {
  const first = [...document.querySelector('main').children].find(
    e => e.getBoundingClientRect().height > 0);
  return first.id || first.className;
}"""

WATCH_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(
  `${e.violatedDirective} blocked ${e.blockedURI || 'inline'}`));
"""


@pytest.fixture
def creator(db):
    user = get_user_model().objects.create_user("olga", password="olga-pass-42")
    user.user_permissions.add(Permission.objects.get(codename="add_task"))
    return user


def test_create_a_task_with_a_live_preview_then_upload_gold(
    page, live_server, login, creator, tmp_path
):
    page.add_init_script(WATCH_VIOLATIONS)
    login(page, live_server, "olga", "olga-pass-42")
    page.click("text=New task")
    assert page.url.endswith("/tasks/new/")
    # The sample item is drawn as the annotator page draws a pair.
    preview = page.locator("#preview-item")
    preview.locator("table.pair").wait_for()
    assert "Ada Lovelace" in preview.inner_text()
    page.fill("#id_display_template", '{"layout": "table", "labels": {"name": "Full name"}}')
    page.fill("#sample-item", '{"name": "<img src=x onerror=alert(1)>"}')
    preview.locator("th:has-text('Full name')").wait_for()
    assert preview.locator("td").inner_text() == "<img src=x onerror=alert(1)>"
    assert preview.locator("img").count() == 0
    page.fill("#id_display_template", '{"layout": "cards"}')
    # The template's problems are written in red under its field.
    check = page.locator(".field #template-check")
    check.locator("p").wait_for()
    assert "must be one of pair, table, text" in check.inner_text()
    assert check.evaluate("e => getComputedStyle(e).color") == DANGER_RED
    # A misspelt field: flagged with a word on its empty row, and named under the field.
    page.fill("#sample-item", '{"name": "Ada", "born": "1815"}')
    page.fill("#id_display_template", '{"layout": "table", "fields": ["nmae", "born"]}')
    flagged = preview.locator("tr.missing-field")
    flagged.wait_for()
    assert flagged.get_attribute("data-field") == "nmae"
    assert flagged.locator(".missing-flag").inner_text() == "not in the sample item"
    assert 'names the field "nmae", which the sample item does not have' in check.inner_text()
    assert preview.locator("tr:not(.missing-field) td").inner_text() == "1815"
    page.fill("#id_display_template", '{"layout": "table", "fields": ["name", "born"]}')
    check.wait_for(state="hidden")
    assert preview.locator("tr.missing-field").count() == 0

    page.fill("#id_display_template", "")
    page.fill("#id_slug", "console-task")
    page.fill("#id_title", "Made in the console")
    page.click("form#task-new button[type=submit]")
    page.wait_for_url("**/tasks/console-task/organize/")
    task = Task.objects.get(slug="console-task")
    assert list(task.organizers.all()) == [creator]
    page.locator("nav.subnav").get_by_role("link", name="Settings").click()
    page.wait_for_url("**/tasks/console-task/organize/settings/")
    current = page.locator("nav.subnav [aria-current=page]")
    assert current.inner_text() == "Settings"
    page.locator("#preview-item table.pair").wait_for()  # the settings preview too
    page.fill("#id_display_template", '{"layout": "pair", "fields": ["name", "brn"]}')
    page.locator("#preview-item tr.missing-field .missing-flag").wait_for()
    assert 'the field "brn"' in page.locator(".field #template-check").inner_text()

    # A refused setting far down the form: the banner is in view and focused, the value kept.
    page.fill("#id_blocked_email_domains", "not a domain!")
    page.fill("#id_title", "Kept while refused")
    page.click("form#settings-form button[type=submit]")
    banner = page.locator("#refusal")
    banner.wait_for()
    assert banner.evaluate(IN_FIRST_VIEWPORT)
    page.wait_for_function("document.activeElement.id === 'refusal'")
    assert "Blocked email domains" in banner.inner_text()
    assert page.input_value("#id_title") == "Kept while refused"
    assert page.input_value("#id_blocked_email_domains") == "not a domain!"
    banner.get_by_role("link", name="Blocked email domains", exact=True).click()
    page.wait_for_function("document.activeElement.id === 'id_blocked_email_domains'")
    assert page.locator("label[for=id_blocked_email_domains]").evaluate(IN_FIRST_VIEWPORT)
    # The design is chosen here too: an option the engine refuses is shown as the others are,
    # the banner in view again although the link above left the field's fragment in the address
    # (the form posts to the section's path: a fragment would scroll the answer past its top).
    assert page.locator("#id_design option").all_inner_texts() == ["default"]
    page.fill("#id_blocked_email_domains", "")
    page.fill("#id_design_options", '{"growth": 1}')
    page.click("form#settings-form button[type=submit]")
    banner.wait_for()
    assert banner.evaluate(IN_FIRST_VIEWPORT)
    assert "growth > 1" in banner.inner_text()
    assert page.input_value("#id_design_options") == '{"growth": 1}'
    banner.get_by_role("link", name="Design options", exact=True).click()
    page.wait_for_function("document.activeElement.id === 'id_design_options'")

    page.locator("nav.subnav").get_by_role("link", name="Data").click()
    page.wait_for_url("**/tasks/console-task/organize/data/")
    gold = tmp_path / "gold.tsv"
    gold.write_text("nope,correct\nk1,maybe\n")  # refused as it is received: the wrong format
    page.set_input_files("#id_gold_file", str(gold))
    page.locator("form#upload-gold button[type=submit]").scroll_into_view_if_needed()
    page.click("form#upload-gold button[type=submit]")
    banner.wait_for()
    # The first thing in view: the banner, at the top of the first viewport, and focused.
    assert page.evaluate("window.scrollY") == 0
    assert banner.evaluate(IN_FIRST_VIEWPORT)
    first = page.evaluate(FIRST_VISIBLE_IN_MAIN)
    assert first == "refusal", first
    page.wait_for_function("document.activeElement.id === 'refusal'")
    text = banner.inner_text()
    assert "Your gold file was not accepted" in text
    assert "line 1" in text and "looks like CSV (comma-separated)" in text
    assert "choose it again" in text
    assert page.locator("nav.subnav [aria-current=page]").inner_text() == "Data"
    banner.get_by_role("link", name="Choose the file again").click()
    page.wait_for_function("document.activeElement.id === 'id_gold_file'")
    assert page.locator("#id_gold_file").evaluate(IN_FIRST_VIEWPORT)
    assert page.evaluate("window.__csp") == []
    assert page.js_errors == []
