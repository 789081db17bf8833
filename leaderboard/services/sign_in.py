"""The brakes on the account forms: password guessing at every place that checks a password
(the site's and the admin's sign-in forms, the API's token endpoints: ``POST /api/token/`` and
``/rotate/`` with a username and password), and floods of sign-ups, password-reset mails and
invitations by mail (``services.invitation_mail``: per person, one count per address).

Each :class:`Brake` counts attempts per client address (as the API throttles see it,
``API_NUM_PROXIES``) and, where there is one, per name (the user name signed in as, the address a
reset mail is asked for); past its limit within its window, the form is refused (429, with
``Retry-After``) until the window ends, a password not even checked. Sign-in counts failures only;
sign-up and reset count every attempt. The counters live in ``CACHES["throttle"]`` (Redis, or a
database table), shared by every web process. A successful sign-in does not reset them: guessing
one account from many addresses still hits the per-name limit.

Failed sign-ins are counted per account, whatever login named it (its user name or any of its
addresses, in any case or Unicode spelling: :func:`counted_name`), so typing the address instead
of the user name buys no second allowance; a login that names no account is counted as typed,
normalised.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.db.models import Q
from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from site_platform.errors import ServiceError, retry_after

from ..email_domains import normalize_email

REFUSED = "Too many failed sign-ins. Wait a few minutes and try again."


@dataclass(frozen=True)
class Brake:
    """One kind of counted attempt: its counters' prefix, the settings naming its limit and
    window (seconds), and what a refused person is told."""

    prefix: str
    limit_setting: str
    window_setting: str
    message: str

    @property
    def limit(self) -> int:
        return int(getattr(settings, self.limit_setting))

    @property
    def window(self) -> int:
        return int(getattr(settings, self.window_setting))


SIGN_IN = Brake("login-failures", "LOGIN_FAILURE_LIMIT", "LOGIN_FAILURE_WINDOW", REFUSED)
SIGN_UP = Brake(
    "signups",
    "SIGNUP_LIMIT",
    "ACCOUNT_ATTEMPT_WINDOW",
    "Too many sign-ups from your address. Wait an hour and try again.",
)
PASSWORD_RESET = Brake(
    "password-resets",
    "PASSWORD_RESET_LIMIT",
    "ACCOUNT_ATTEMPT_WINDOW",
    "Too many password reset requests. Wait an hour and try again.",
)
# Counted per person sending and per address invited (services.invitation_mail).
INVITATION_MAIL = Brake(
    "invitation-mails",
    "INVITATION_MAIL_LIMIT",
    "INVITATION_MAIL_WINDOW",
    "You have sent as many invitations by mail as you may for now. Wait an hour and try again, "
    "or make invitation links and pass them on yourself.",
)


class AttemptsRefused(ServiceError):
    """Past a brake's limit: the form is refused until its window ends."""

    code = "throttled"
    http_status = 429

    def __init__(self, brake: Brake) -> None:
        super().__init__(brake.message, headers=retry_after(brake.window))


class SignInRefused(AttemptsRefused):
    """Past the limit of failed sign-ins: no password is checked until the window ends."""

    def __init__(self) -> None:
        super().__init__(SIGN_IN)


def attempt_keys(
    request: Request | HttpRequest, name: str | None, brake: Brake = SIGN_IN
) -> list[str]:
    """The counters one attempt for ``name`` (``None``: counted by address only) from
    ``request``'s client belongs to, under ``brake``."""
    address = BaseThrottle().get_ident(request)  # type: ignore[arg-type]  # reads META only
    keys = [f"{brake.prefix}:addr:{address}"]
    if name is not None:
        counted = counted_name(name, by_account=brake is SIGN_IN)
        digest = hashlib.sha256(counted.encode()).hexdigest()[:32]
        keys.append(f"{brake.prefix}:name:{digest}")
    return keys


def normalized_login(login: str) -> str:
    """A typed login (a user name or an address) in the one spelling: an address by
    ``email_domains.normalize_email``, a user name NFKC (as Django stores it) and stripped."""
    text = unicodedata.normalize("NFKC", login or "").strip()
    if "@" in text:
        try:
            return normalize_email(text)
        except ValueError:
            return text.lower()
    return text


def counted_name(login: str, *, by_account: bool = True) -> str:
    """What a typed ``login`` is counted as: with ``by_account``, the account it names (by user
    name, without case, or by any of its addresses), so every login of one account shares one
    counter; else, or when it names none, the normalised text without case."""
    text = normalized_login(login)
    if by_account and text:
        by_address = Q(email__iexact=text) | Q(
            pk__in=EmailAddress.objects.filter(email__iexact=text).values("user")
        )
        account = (
            get_user_model()
            .objects.filter(Q(username__iexact=text) | by_address)
            .order_by("pk")
            .values_list("pk", flat=True)
            .first()
        )
        if account is not None:
            return f"account:{account}"
    return f"login:{text.casefold()}"


def failure_keys(request: Request | HttpRequest, username: str) -> list[str]:
    """The sign-in counters one attempt for ``username`` from ``request``'s client belongs to."""
    return attempt_keys(request, username or "", SIGN_IN)


def _over_limit(keys: list[str], brake: Brake, attempts: int = 1) -> bool:
    counts = caches["throttle"].get_many(keys)
    return any(count + attempts > brake.limit for count in counts.values())


def check_allowed(keys: list[str], brake: Brake, attempts: int = 1) -> None:
    """Raise :class:`AttemptsRefused` if ``attempts`` more would take any of the counters past
    ``brake``'s limit."""
    if _over_limit(keys, brake, attempts):
        raise SignInRefused() if brake is SIGN_IN else AttemptsRefused(brake)


def check_sign_in_allowed(keys: list[str]) -> None:
    """Raise :class:`SignInRefused` if any of the counters has reached the limit."""
    check_allowed(keys, SIGN_IN)


def count_attempt(keys: list[str], brake: Brake, attempts: int = 1) -> None:
    """Count ``attempts`` (one) on each of the counters, for ``brake``'s window."""
    cache = caches["throttle"]
    window = brake.window
    for key in keys:
        cache.add(key, 0, timeout=window)
        try:
            cache.incr(key, attempts)
        except ValueError:  # expired between add and incr
            cache.set(key, attempts, timeout=window)


def count_failed_sign_in(keys: list[str]) -> None:
    count_attempt(keys, SIGN_IN)
