"""The annotator page in real Chromium: keyboard only, undo, skip, reload, lost network.

Every answer is checked in the database: it arrives exactly once (counted by ``client_id``),
with the answer given for the item that was on screen.
"""

import re

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Assignment, Judgment
from annotation.services import pause_annotator, request_verification, unpause_annotator
from leaderboard.models import Item

from pipeline_support import add_items, add_run, make_task, make_team

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "ann-pass"
RUN_NAME = "zz-secret-run-name"
TEAM_NAME = "Zz Secret Team Name"
EVIL = '"><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def _queue(n=5, slug="pairs", judgments_per_item=1):
    task = make_task(
        slug=slug,
        title="Record pairs",
        question="Same person? " + EVIL,
        judgments_per_item=judgments_per_item,
    )
    items = add_items(task, n)
    for item in items:
        Item.objects.filter(pk=item.pk).update(
            payload={
                "left": {"name": f"person {item.index}", "postcode": "4129", "note": EVIL},
                "right": {"name": f"person {item.index}", "postcode": "4219", "note": EVIL},
            }
        )
    add_run(task, make_team(TEAM_NAME), [it.index for it in items], name=RUN_NAME)
    request_verification(task=task, item_ids=[it.pk for it in items])
    user = get_user_model().objects.create_user("ann", password=PASSWORD)
    task.annotators.add(user)
    return task, user


# Another item is on screen, or a final status screen (not the brief "loading" one).
NEXT_SHOWN = """t => {
  const token = document.getElementById('ann-item').dataset.token;
  const screen = document.getElementById('ann-screen');
  return token ? token !== t : !screen.hidden && screen.dataset.status !== 'loading';
}"""


def _open(page, live_server, login, slug="pairs"):
    login(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/annotate/{slug}/")
    return _shown(page)


def _shown(page) -> int:
    """The item index on screen (once an item is shown)."""
    page.wait_for_selector("#ann-item[data-token]")
    text = page.locator("#ann-item table.pair tbody tr").first.locator("td").first.inner_text()
    return int(re.fullmatch(r"person (\d+)", text).group(1))


def _press(page, key) -> int:
    """Press ``key`` on the current item; return the index of the item shown next (or -1)."""
    token = page.get_attribute("#ann-item", "data-token")
    page.keyboard.press(key)
    page.wait_for_function(NEXT_SHOWN, arg=token)
    return _shown(page) if page.get_attribute("#ann-item", "data-token") else -1


def _outbox_empty(page):
    page.wait_for_selector('#ann-outbox[data-waiting="0"]', state="attached")
    assert page.is_hidden("#ann-outbox")


def _live():
    return Judgment.objects.filter(withdrawn_at__isnull=True)


def _answers():
    return {j.request.item.index: j.answer for j in _live().select_related("request__item")}


def _assert_exactly_once():
    ids = list(Judgment.objects.values_list("client_id", flat=True))
    assert len(ids) == len(set(ids))
    pairs = list(_live().values_list("request_id", "annotator_id"))
    assert len(pairs) == len(set(pairs))


def _assert_blind_and_inert(page):
    html = page.content()
    assert RUN_NAME not in html and TEAM_NAME not in html
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#ann-item img, #ann-item script").count() == 0
    assert page.js_errors == []


def test_answer_items_by_keyboard_only(live_server, page, login, wait_for):
    _queue(5)
    first = _open(page, live_server, login)
    assert page.evaluate("document.activeElement.id") == "ann-item"
    # The differing field is flagged; payload markup is shown as text.
    assert page.locator("#ann-item tr.differs th").inner_text() == "postcode"
    assert EVIL in page.locator("#ann-item").inner_text()
    # `?` shows the help, Esc hides it; `j` goes to the justification, Enter comes back.
    page.keyboard.press("?")
    assert page.is_visible("#ann-help")
    page.keyboard.press("Escape")
    assert page.is_hidden("#ann-help")
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.id") == "ann-justification"
    page.keyboard.type("yes n y")  # answer keys typed here are text, not answers
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "ann-item"
    assert page.get_attribute("#ann-item", "data-token") and Judgment.objects.count() == 0
    given, current = {}, first
    for key, answer in (("y", "correct"), ("n", "incorrect"), ("s", "cannot_tell")):
        given[current] = answer
        current = _press(page, key)
        assert page.evaluate("document.activeElement.id") == "ann-item"
    wait_for(lambda: len(_answers()) == 3, message="three judgments")
    assert _answers() == given
    assert Judgment.objects.get(request__item__index=first).justification == "yes n y"
    assert (
        Judgment.objects.exclude(request__item__index=first).filter(justification="").count() == 2
    )
    assert all(j.seconds_spent is not None and j.seconds_spent >= 0 for j in _live())
    wait_for(
        lambda: "Answered today: 3" in page.inner_text("#ann-progress"),
        message="progress to count the answers",
    )
    _assert_exactly_once()
    _assert_blind_and_inert(page)


def test_keys_that_are_selector_syntax_are_ignored_without_an_error(live_server, page, login):
    _queue(2)
    _open(page, live_server, login)
    token = page.get_attribute("#ann-item", "data-token")
    for key in ('"', "\\", "]", "'"):
        page.keyboard.press(key)
    assert page.js_errors == []
    assert page.get_attribute("#ann-item", "data-token") == token
    assert Judgment.objects.count() == 0


def test_undo_then_answer_differently_stores_one_judgment(live_server, page, login, wait_for):
    # Two judgments per item (the server takes back any answer of one's, complete or not).
    _queue(4, judgments_per_item=2)
    # Undo while the answer is still in the outbox (requests held back by the route).
    page.route("**/annotate/api/answers", lambda route: route.abort())
    first = _open(page, live_server, login)
    second = _press(page, "y")
    assert second != first
    # If the answer is being sent as `u` lands, the undo waits for that (aborted) send to settle.
    page.keyboard.press("u")
    wait_for(lambda: _shown(page) == first, message="the first item shown again")
    page.unroute("**/annotate/api/answers")
    _press(page, "n")
    wait_for(lambda: _answers() == {first: "incorrect"}, message="the second answer")
    # Undo after the answer reached the server: the server withdraws it.
    assert _shown(page) == second
    _press(page, "y")
    wait_for(
        lambda: _answers() == {first: "incorrect", second: "correct"},
        message="the answer on the second item",
    )
    _outbox_empty(page)
    page.keyboard.press("u")
    page.wait_for_function(
        "t => document.getElementById('ann-item').dataset.token && "
        "document.querySelector('#ann-item td').textContent === t",
        arg=f"person {second}",
    )
    wait_for(lambda: second not in _answers(), message="the undone answer to be withdrawn")
    _press(page, "s")
    wait_for(
        lambda: _answers() == {first: "incorrect", second: "cannot_tell"},
        message="the new answer on the second item",
    )
    assert _live().count() == 2
    _assert_exactly_once()
    _assert_blind_and_inert(page)


def test_skipped_item_never_comes_back(live_server, page, login, wait_for):
    _queue(3)
    skipped = _open(page, live_server, login)
    seen = [skipped]
    current = _press(page, "s")
    while current != -1:
        seen.append(current)
        current = _press(page, "y")
    assert sorted(seen) == [0, 1, 2]
    wait_for(lambda: len(_answers()) == 3, message="three judgments")
    assert _answers()[skipped] == "cannot_tell"
    page.reload()
    page.wait_for_selector("#ann-screen:not([hidden])")
    assert page.get_attribute("#ann-screen", "data-status") == "empty"
    assert page.locator("#ann-item[data-token]").count() == 0
    _assert_exactly_once()
    assert page.js_errors == []


def test_reload_mid_item_loses_nothing_and_sends_nothing_twice(live_server, page, login, wait_for):
    _queue(5)
    first = _open(page, live_server, login)
    second = _press(page, "y")
    wait_for(lambda: len(_answers()) == 1, message="the first answer")
    # Once the answer is in, the page tops up to its limit (the answer's lease counted till then).
    page.wait_for_function("""() => Object.keys(sessionStorage).some(k =>
        k.startsWith('ann-held:') && JSON.parse(sessionStorage.getItem(k)).length === 3)""")
    page.reload()
    assert _shown(page) == second  # the same item, its lease still held
    # The prefetched items were given back when the page went away.
    wait_for(
        lambda: Assignment.objects.filter(state="released").count() == 2,
        message="the prefetched lease to be released",
    )
    # An answer still waiting in the outbox when the page reloads is sent after the reload.
    page.route("**/annotate/api/answers", lambda route: route.abort())
    third = _press(page, "n")
    assert page.get_attribute("#ann-outbox", "data-waiting") == "1"
    page.unroute("**/annotate/api/answers")
    page.reload()
    assert _shown(page) == third
    wait_for(lambda: len(_answers()) == 2, message="the outboxed answer after reload")
    assert _answers() == {first: "correct", second: "incorrect"}
    page.reload()
    assert _shown(page) == third
    assert _answers() == {first: "correct", second: "incorrect"}
    _assert_exactly_once()
    assert page.js_errors == []


def test_offline_answers_wait_and_arrive_exactly_once(
    live_server, page, login, wait_for, browser_context
):
    _queue(6)
    first = _open(page, live_server, login)
    browser_context.set_offline(True)
    second = _press(page, "y")
    third = _press(page, "n")  # prefetched: shown at once without the network
    page.wait_for_function(
        "() => /offline — 2 answers waiting/.test(document.getElementById('ann-outbox')"
        ".textContent)"
    )
    assert Judgment.objects.count() == 0
    browser_context.set_offline(False)
    wait_for(lambda: len(_answers()) == 2, message="the two waiting answers")
    _outbox_empty(page)
    assert _answers() == {first: "correct", second: "incorrect"}

    # The first POST fails with a 500, the second reaches the server but its response is lost:
    # the page retries with the same client_id and the answer is stored exactly once.
    calls = []

    def flaky(route):
        calls.append(route.request.post_data_json["client_id"])
        if len(calls) == 1:
            route.fulfill(status=500, json={"error": {"code": "boom", "message": "boom"}})
        elif len(calls) == 2:
            route.fetch()
            route.abort()
        else:
            route.continue_()

    page.route("**/annotate/api/answers", flaky)
    _press(page, "s")
    # Route handlers run only while this thread is inside a Playwright call: wait in the page.
    wait_for(lambda: page.wait_for_timeout(50) or len(calls) >= 3, message="two retries")
    wait_for(lambda: len(_answers()) == 3, message="the retried answer")
    _outbox_empty(page)
    assert len(set(calls)) == 1
    assert Judgment.objects.filter(client_id=calls[0]).count() == 1
    assert _answers()[third] == "cannot_tell"
    _assert_exactly_once()
    _assert_blind_and_inert(page)


def test_leases_are_renewed_and_status_screens_explain_why_nothing_is_shown(
    live_server, page, login, wait_for, settings
):
    settings.ANNOTATION_LEASE_SECONDS = 6  # heartbeat every 2 s
    task, user = _queue(3)
    task.annotator_daily_cap = 1
    task.save(update_fields=["annotator_daily_cap"])
    _open(page, live_server, login)
    token = page.get_attribute("#ann-item", "data-token")
    lease = Assignment.objects.get(token=token)
    # The held leases outlive their 6 seconds while the page is open.
    wait_for(
        lambda: (
            page.wait_for_timeout(200)
            or Assignment.objects.get(pk=lease.pk).expires_at > lease.expires_at
        ),
        message="a heartbeat",
    )
    assert _press(page, "y") == -1  # the daily limit: one lease only
    page.wait_for_selector('#ann-screen[data-status="daily_cap"]')
    assert "limit of 1 answers" in page.inner_text("#ann-screen")
    wait_for(lambda: len(_answers()) == 1, message="the answer")

    task.annotator_daily_cap = None
    task.save(update_fields=["annotator_daily_cap"])
    pause_annotator(task=task, annotator=user, reason="gold accuracy " + EVIL)
    page.reload()
    page.wait_for_selector('#ann-screen[data-status="paused"]')
    assert "paused for review (gold accuracy " + EVIL in page.inner_text("#ann-screen")
    assert page.is_disabled("button[data-key=y]")

    # The pause lifted, back to draft: only reference sample candidates and gold items are
    # answered, and this draft has none waiting.
    unpause_annotator(task=task, annotator=user)
    task.state = "draft"
    task.save(update_fields=["state"])
    page.reload()
    page.wait_for_selector('#ann-screen[data-status="empty"]')
    assert "This task is a draft" in page.inner_text("#ann-screen")
    _assert_blind_and_inert(page)


def test_a_pause_takes_the_held_items_away_and_a_late_answer_is_said_not_counted(
    live_server, page, login, wait_for, settings
):
    settings.ANNOTATION_LEASE_SECONDS = 6  # heartbeat every 2 s
    task, user = _queue(4)
    first = _open(page, live_server, login)
    # The answer waits in the outbox (sends refused by the route) while the pause comes.
    page.route("**/annotate/api/answers", lambda route: route.abort())
    _press(page, "y")
    pause_annotator(task=task, annotator=user, reason="review")
    assert not Assignment.objects.filter(annotator=user, state="active").exists()
    # The next heartbeat drops the revoked items; the page says why nothing is shown.
    page.wait_for_selector('#ann-screen[data-status="paused"]', timeout=15000)
    page.unroute("**/annotate/api/answers")
    page.evaluate("window.dispatchEvent(new Event('online'))")
    # A function, not an expression: the page's CSP refuses the eval an expression needs.
    page.wait_for_function(
        "() => document.getElementById('ann-message').textContent.includes('not counted')"
    )
    wait_for(
        lambda: _live().filter(request__item__index=first, late=True, counted=False).exists(),
        message="the late answer kept",
    )
    assert not Judgment.objects.filter(counted=True).exists()
    _assert_exactly_once()
    _assert_blind_and_inert(page)


def test_leaving_before_the_claims_reply_strands_no_item(live_server, page, login, wait_for):
    # The page claims as it opens; the annotator leaves before the reply comes (here: the reply
    # is lost after the server made the leases). The page never learnt the tokens, so it could
    # not release them; reopened, it is handed those same leases instead of "You already hold 3".
    _queue(5)
    login(page, live_server, "ann", PASSWORD)
    seen = []

    def lose_reply(route):
        route.fetch()  # the server leases the items...
        seen.append(1)
        route.abort()  # ...and the page never hears of them

    page.route("**/annotate/api/tasks/pairs/claim", lose_reply)
    page.goto(f"{live_server.url}/annotate/pairs/")
    wait_for(lambda: page.wait_for_timeout(50) or seen, message="the claim to reach the server")
    stranded = set(Assignment.objects.filter(state="active").values_list("token", flat=True))
    assert len(stranded) == 3
    page.goto("about:blank")  # the annotator leaves
    page.unroute("**/annotate/api/tasks/pairs/claim")
    page.goto(f"{live_server.url}/annotate/pairs/")
    _shown(page)
    token = page.get_attribute("#ann-item", "data-token")
    assert {token} <= {str(t) for t in stranded}  # one of its own leases, none new
    assert Assignment.objects.filter(state="active").count() == 3
    assert "already hold" not in page.content()
    # The page says it holds them at once, so no other tab of the annotator is handed them.
    wait_for(
        lambda: (
            page.wait_for_timeout(50)
            or Assignment.objects.filter(state="active", beat_at__isnull=False).count() == 3
        ),
        message="the first heartbeat",
    )
    assert page.js_errors == []
