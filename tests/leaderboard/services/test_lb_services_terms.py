"""A team accepts a task's terms before its first run: who accepted which version and when is
recorded; a run without acceptance is refused with nothing stored or counted; a change of the
terms asks for acceptance again (a change of line endings or trailing spaces does not)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage

from leaderboard.models import Run, TermsAcceptance
from leaderboard.selectors import quota_for, terms_accepted, terms_digest, terms_of_teams
from leaderboard.services.ingest import submit_and_ingest
from leaderboard.services.runs import SubmissionError
from leaderboard.services.tasks import update_task
from leaderboard.services.teams import create_team
from leaderboard.services.terms import TermsError, accept_terms

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


def submit(task, team, user):
    upload = io.BytesIO(b"a\t0.5\nb\t0.25\n")
    return submit_and_ingest(task=task, team=team, user=user, upload=upload, file_name="r.tsv")


def test_a_member_accepts_for_the_team_and_it_is_recorded(with_terms, team, participant):
    acceptance, created = accept_terms(task=with_terms, team=team, user=participant)
    assert created
    assert (acceptance.team, acceptance.accepted_by) == (team, participant)
    assert acceptance.digest == terms_digest(with_terms) != ""
    assert acceptance.terms == with_terms.terms and acceptance.accepted_at is not None
    assert terms_accepted(task=with_terms, team=team)


def test_accepting_again_is_idempotent(with_terms, team, participant):
    first, _ = accept_terms(task=with_terms, team=team, user=participant)
    again, created = accept_terms(
        task=with_terms, team=team, user=participant, digest=terms_digest(with_terms)
    )
    assert (again.pk, created) == (first.pk, False)
    assert TermsAcceptance.objects.count() == 1


def test_a_run_without_acceptance_is_refused_and_nothing_is_stored_or_counted(
    with_terms, team, participant
):
    with pytest.raises(SubmissionError) as info:
        submit(with_terms, team, participant)
    assert (info.value.code, info.value.http_status) == ("terms_not_accepted", 403)
    assert f"/tasks/{with_terms.slug}/submit/" in info.value.message
    assert "nothing was stored or counted" in info.value.message
    assert not Run.objects.exists()
    assert quota_for(task=with_terms, team=team).used_total == 0
    assert not default_storage.exists("received-runs")
    accept_terms(task=with_terms, team=team, user=participant)
    assert submit(with_terms, team, participant).state == Run.State.QUEUED


def test_a_task_without_terms_asks_for_no_acceptance(task, team, participant):
    assert terms_digest(task) == "" and terms_accepted(task=task, team=team)
    assert submit(task, team, participant).state == Run.State.QUEUED
    with pytest.raises(TermsError) as info:
        accept_terms(task=task, team=team, user=participant)
    assert (info.value.code, info.value.http_status) == ("no_terms", 409)


def test_changed_terms_ask_every_team_again_and_the_earlier_acceptance_stays(
    with_terms, team, participant
):
    first, _ = accept_terms(task=with_terms, team=team, user=participant)
    submit(with_terms, team, participant)
    update_task(task=with_terms, terms=with_terms.terms + "\n\nAnd cite the task.")
    assert not terms_accepted(task=with_terms, team=team)
    (entry,) = terms_of_teams(task=with_terms, teams=[team])
    assert entry.acceptance is None and entry.earlier
    with pytest.raises(SubmissionError) as info:
        submit(with_terms, team, participant)
    assert info.value.code == "terms_not_accepted"
    second, created = accept_terms(task=with_terms, team=team, user=participant)
    assert created and second.digest != first.digest
    assert set(TermsAcceptance.objects.values_list("pk", flat=True)) == {first.pk, second.pk}
    (entry,) = terms_of_teams(task=with_terms, teams=[team])
    assert entry.acceptance == second and not entry.earlier


def test_resaving_the_same_words_keeps_the_acceptance(with_terms, team, participant):
    accept_terms(task=with_terms, team=team, user=participant)
    update_task(task=with_terms, terms=with_terms.terms.replace("\n", "\r\n") + "   \r\n")
    assert terms_accepted(task=with_terms, team=team)


def test_acceptance_of_terms_that_changed_since_they_were_read_is_refused(
    with_terms, team, participant
):
    read = terms_digest(with_terms)
    update_task(task=with_terms, terms="New terms.")
    with pytest.raises(TermsError) as info:
        accept_terms(task=with_terms, team=team, user=participant, digest=read)
    assert (info.value.code, info.value.http_status) == ("terms_changed", 409)
    assert info.value.extra["digest"] == terms_digest(with_terms)
    assert not TermsAcceptance.objects.exists()


def test_only_a_member_accepts_for_a_team(with_terms, team):
    outsider = get_user_model().objects.create_user("outsider")
    with pytest.raises(TermsError) as info:
        accept_terms(task=with_terms, team=team, user=outsider)
    assert (info.value.code, info.value.http_status) == ("not_team_member", 403)
    assert not TermsAcceptance.objects.exists()


def test_acceptance_is_per_team(with_terms, team, participant):
    other = create_team(name="Beta", members=[participant])
    accept_terms(task=with_terms, team=team, user=participant)
    assert terms_accepted(task=with_terms, team=team)
    assert not terms_accepted(task=with_terms, team=other)
    with pytest.raises(SubmissionError):
        submit(with_terms, other, participant)
