"""Fixtures for the upload tests (services and API): people, a team, an open task, sent jobs;
a stopped clock; and ``lb_world``, the world of the permission matrices (API and pages)."""

from __future__ import annotations

import io
import time
from datetime import datetime, timedelta
from types import SimpleNamespace

import account_support
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from mail_world import MailWorld, build_mail_world
from shared_world import copied_world, shared_world

from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from pipeline_support import PipelineDriver, open_unchecked
from role_world import build_world


class Clock:
    """``django.utils.timezone.now`` held at ``now`` (moved by :meth:`move`), so a test crosses
    a task's dates without sleeping. Every service reads the time through it."""

    def __init__(self, monkeypatch):
        self.now = timezone.now()
        monkeypatch.setattr(timezone, "now", lambda: self.now)

    def move(self, **delta) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """A stopped clock that the test moves (``clock.move(hours=2)``)."""
    return Clock(monkeypatch)


class RateLimitClock:
    """The clock of allauth's rate limits (``ACCOUNT_RATE_LIMITS``) held still, moved by
    :meth:`move`: a test crosses a limit's window without sleeping."""

    def __init__(self, monkeypatch):
        from allauth.core.internal import ratelimit

        self.now = time.time()
        monkeypatch.setattr(
            ratelimit,
            "time",
            SimpleNamespace(time=lambda: self.now, monotonic=time.monotonic, sleep=time.sleep),
        )

    def move(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def rate_limit_clock(monkeypatch) -> RateLimitClock:
    """allauth's rate-limit clock, stopped; ``rate_limit_clock.move(181)`` crosses a cooldown."""
    return RateLimitClock(monkeypatch)


class SentJobs(list):
    """Pipeline messages recorded instead of sent: ``(name, args)`` tuples."""

    def names(self) -> list[str]:
        return [name for name, _args in self]


@pytest.fixture
def sent_jobs(monkeypatch) -> SentJobs:
    """Record what ``leaderboard.jobs`` would send to Celery (nothing reaches a broker)."""
    driver = PipelineDriver(monkeypatch)
    driver.sent = SentJobs()
    return driver.sent


@pytest.fixture
def newcomer(db):
    """An account whose address is not verified yet (``account_support.newcomer``)."""
    return account_support.newcomer()


@pytest.fixture
def participant(db):
    return get_user_model().objects.create_user("pat")


@pytest.fixture
def organizer(db):
    return get_user_model().objects.create_user("org")


@pytest.fixture
def team(participant):
    return create_team(name="Alpha", members=[participant])


@pytest.fixture
def task(organizer):
    return open_unchecked(
        create_task(
            slug="linkage",
            title="Record linkage",
            organizers=[organizer],
            max_runs_per_team=5,
            max_runs_per_team_per_day=3,
        )
    )


def upload_file(text: str | bytes, name: str = "run.tsv") -> io.BytesIO:
    """A named in-memory upload (what Django's upload handlers hand over)."""
    stream = io.BytesIO(text.encode() if isinstance(text, str) else text)
    stream.name = name
    return stream


@pytest.fixture
def make_upload():
    return upload_file


built_lb_world = shared_world(build_world)


@pytest.fixture
def lb_world(db, built_lb_world):
    """The permission matrices' world (``tests/support/role_world.py``), built once per module."""
    return copied_world(built_lb_world)


@pytest.fixture
def mail_world(db) -> MailWorld:
    """A task, its organizer and two teams whose members have addresses (``tests/support/
    mail_world.py``): the mail tests' world."""
    return build_mail_world()


@pytest.fixture
def pipeline(monkeypatch) -> PipelineDriver:
    """The pipeline's messages recorded and run in this process on ``drain()``."""
    return PipelineDriver(monkeypatch)


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """``with committed():`` runs what the block enqueues on commit (a test's transaction
    never commits)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def media_root(settings, tmp_path):
    """Stored files (received runs, a task's data files) go to this test's own directory."""
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def with_terms(task):
    """``task`` with terms, which a team accepts before its first run."""
    from leaderboard.services.tasks import update_task

    return update_task(task=task, terms="# Terms\n\nRuns are **published** under the team's name.")
