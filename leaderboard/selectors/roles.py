"""Who a user is: the tasks they organize and annotate, whether they may create tasks, their
teams and API token; and the sample item the organizers' set-up tools preview. The one rule for
organizer rights is :func:`organized_tasks`; the one rule for acting at all (an address
verified) is :func:`has_verified_email`."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias, TypedDict, TypeGuard, cast

from allauth.account.models import EmailAddress
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import CharField, Exists, OuterRef, QuerySet
from django.urls import reverse

from site_platform.errors import ServiceError
from site_platform.prepared import PreparedQuery, Slot

from ..models import (
    ApiToken,
    Item,
    Run,
    Task,
    Team,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    # Whoever a request is from: the selectors answer for the signed-out too.
    AnyUser: TypeAlias = User | AnonymousUser


def signed_in(user: AnyUser | None) -> TypeGuard[User]:
    """Whether ``user`` is an account (not the signed-out visitor, not nobody)."""
    return bool(getattr(user, "is_authenticated", False))


def has_verified_email(user: AnyUser) -> bool:
    """Whether ``user`` may act (hold an API token, make or join a team, submit a run, accept an
    invitation, claim or answer items): one of their addresses is verified, or they have none
    to verify (an account an administrator made without one, ``createsuperuser``, the admin,
    the demo: vouched for by whoever made it). Sign-up always asks for an address, so every
    account made by sign-up waits for its verification. The sign-in page's rule too
    (``leaderboard.views.account_stages``)."""
    if not signed_in(user):
        return False
    if getattr(user, VERIFIED_THIS_REQUEST, False):
        return True
    verified = list(EmailAddress.objects.filter(user=user).values_list("verified", flat=True))
    return _may_act(has_addresses=bool(verified), has_verified=any(verified), email=user.email)


def _may_act(*, has_addresses: bool, has_verified: bool, email: str) -> bool:
    return has_verified if has_addresses else not email


# Set on an API request's user once its address was found verified (by the token lookup,
# :func:`api_token_for_key`, or ``check_verified_email`` with ``for_request``): the services the
# view calls check again, and would read the address a second time in the same request. Only
# the API sets it, on the user object its authentication loaded for this one request.
VERIFIED_THIS_REQUEST = "_verified_this_request"


class UnverifiedEmail(ServiceError, PermissionDenied):
    """An account whose address is not verified yet tried to act (403): the pages show the
    message on their 403 page (a ``PermissionDenied``), both APIs in their error body."""

    code = "unverified_email"
    http_status = 403

    def __init__(self, user: AnyUser) -> None:
        address = (user.email if signed_in(user) else "") or "your email address"
        super().__init__(
            f"verify your email address first: open the link in the mail sent to {address}. "
            f"To have it sent again, sign in at {settings.SITE_URL}{reverse('login')}."
        )


def check_verified_email(user: AnyUser, *, for_request: bool = False) -> None:
    """Raise :class:`UnverifiedEmail` unless ``user`` may act (:func:`has_verified_email`).

    ``for_request``: ``user`` is the object an API request authenticated, which lives as long
    as the request; the answer is remembered on it for the rest of the request."""
    if not has_verified_email(user):
        raise UnverifiedEmail(user)
    if for_request:
        setattr(user, VERIFIED_THIS_REQUEST, True)


def organized_tasks(user: AnyUser) -> QuerySet[Task]:
    """The tasks ``user`` organizes: the one rule for organizer rights, used by both APIs, the
    pages and the admin. Only a task's organizer list grants them (superusers hold them on every
    task); staff status grants none (it opens the admin, which shows these tasks only)."""
    if not signed_in(user):
        return Task.objects.none()
    if user.is_superuser:
        return Task.objects.all()
    return Task.objects.filter(organizers=user.pk)


def is_organizer(*, task: Task, user: AnyUser) -> bool:
    return organized_tasks(user).filter(pk=task.pk).exists()


def can_create_tasks(user: AnyUser) -> bool:
    """Whether ``user`` may create a task (and so organize it): the one rule of the pages and
    the API. ``settings.TASK_CREATION``: ``"role"`` (staff, or the permission
    ``leaderboard.add_task`` an admin grants once) or ``"anyone"`` (every signed-in user)."""
    if not signed_in(user):
        return False
    if settings.TASK_CREATION == "anyone":
        return True
    return bool(user.is_staff or user.has_perm("leaderboard.add_task"))


def sample_payload(task: Task) -> object | None:
    """A payload of one of the task's items (the first that has one, in index order) for the
    preview of its display template; ``None`` if none of the first items has one."""
    payloads = Item.objects.filter(task=task).order_by("index").values_list("payload", flat=True)
    return next((payload for payload in payloads[:50] if payload), None)


def may_set_up_tasks(user: AnyUser) -> bool:
    """Whether ``user`` may use the organizers' set-up tools that touch no task (the display
    template preview): those who may create tasks or organize one."""
    return can_create_tasks(user) or organized_tasks(user).exists()


def annotated_tasks(user: AnyUser) -> QuerySet[Task]:
    """The tasks ``user`` annotates, in any state (a closed task may still have runs to
    verify; an annotator of a draft sees it in the annotation app only)."""
    if not signed_in(user):
        return Task.objects.none()
    return Task.objects.filter(annotators=user.pk)


def is_annotator(*, task: Task, user: AnyUser) -> bool:
    return annotated_tasks(user).filter(pk=task.pk).exists()


class UserRoles(TypedDict):
    teams: QuerySet[Team]
    organized: QuerySet[Task]
    annotated: QuerySet[Task]


def user_roles(user: AnyUser) -> UserRoles:
    """What a signed-in user is: their teams, the tasks they organize and annotate."""
    return {
        "teams": teams_of(user),
        "organized": organized_tasks(user).order_by("slug"),
        "annotated": annotated_tasks(user).order_by("slug"),
    }


def may_edit_run(*, run: Run, user: AnyUser) -> bool:
    """Whether ``user`` may change the run's public details: its team's members (and
    superusers)."""
    if not signed_in(user):
        return False
    return user.is_superuser or run.team.members.filter(pk=user.pk).exists()


def may_withdraw_run(*, run: Run, user: AnyUser) -> bool:
    """Whether ``user`` may withdraw the run: its team's members and the task's organizers."""
    if not signed_in(user):
        return False
    return is_organizer(task=run.task, user=user) or (run.team.members.filter(pk=user.pk).exists())


def api_token_of(user: User) -> ApiToken | None:
    """The user's API token (its digest and creation time; the key itself is not stored)."""
    return ApiToken.objects.filter(user=user).first()


def api_token_for_key(key: str) -> ApiToken | None:
    """The token whose key is ``key`` (looked up by the key's digest), with its user.

    Every API request reads it, then checks the user's address (:func:`check_verified_email`):
    one statement, compiled once per process, answers both, and a user found verified is marked
    so for the rest of the request (:data:`VERIFIED_THIS_REQUEST`)."""
    found = _TOKEN_BY_DIGEST.instances(digest=ApiToken.digest_of(key))
    if not found:
        return None
    token = cast(ApiToken, found[0])
    if _may_act(
        has_addresses=token.user_has_addresses,  # type: ignore[attr-defined]
        has_verified=token.user_has_verified,  # type: ignore[attr-defined]
        email=token.user.email,
    ):
        setattr(token.user, VERIFIED_THIS_REQUEST, True)
    return token


def _token_by_digest() -> QuerySet[ApiToken]:
    addresses = EmailAddress.objects.filter(user_id=OuterRef("user_id"))
    return (
        ApiToken.objects.select_related("user")
        .filter(digest=Slot("digest", CharField()))
        .annotate(
            user_has_addresses=Exists(addresses),
            user_has_verified=Exists(addresses.filter(verified=True)),
        )
        .order_by("pk")[:1]
    )


_TOKEN_BY_DIGEST = PreparedQuery(_token_by_digest)


def teams_of(user: AnyUser) -> QuerySet[Team]:
    if not signed_in(user):
        return Team.objects.none()
    return Team.objects.filter(members=user).order_by("name")
