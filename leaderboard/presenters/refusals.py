"""A refused action of an organizer page as its one banner shows it (``_refusal.html``): what was
refused, why, each field concerned with a link to it, the checklist's missing needs for an opening
refused, the problems of a file by line, and where to go to put it right."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from site_platform.errors import ServiceError

# Said when the refused request carried a file: a browser never fills a file input again.
FILE_AGAIN = "A file is not kept after a refusal: choose it again."
# The code of a refusal that asks for a confirmation (a draw that replaces the reference sample,
# candidates that start a new sampling frame).
CONFIRMATION_NEEDED = "confirmation_needed"


@dataclass(frozen=True)
class FieldRefusal:
    """One field's errors, and the id of its input (the banner links to it)."""

    label: str
    anchor: str
    messages: tuple[str, ...]


@dataclass(frozen=True)
class Refusal:
    """What the banner says: ``what`` was refused (a sentence without its full stop), the
    ``reason`` (the error's message), the ``fields`` concerned, the missing ``checks`` (an
    opening refused), the ``problems`` found (by line; ``total`` counts them all), and a link
    (``link``, ``link_text``) to where it is put right (none when the fields listed are links);
    ``file_again``: the request had a file,
    which must be chosen again."""

    what: str
    reason: str
    link: str
    link_text: str
    fields: tuple[FieldRefusal, ...] = ()
    checks: tuple[Any, ...] = ()
    problems: Sequence[Any] = ()
    total: int = 0
    file_again: bool = False

    @property
    def file_again_text(self) -> str:
        return FILE_AGAIN if self.file_again else ""


def refusal_of(
    error: ServiceError | None,
    *,
    what: str,
    link: str,
    link_text: str,
    form=None,
    file_again: bool = False,
) -> Refusal:
    """The banner of ``error`` (``None``: a form whose own validation refused it). ``form``: the
    form as sent, whose fields in error are listed (by their label, linked to their input);
    the error's problems are then not listed again, and each field is a link (no other is given).
    An opening refused for its checklist lists its missing needs instead, each linked to where it
    is done. Else the link goes to the form's confirmation box for a refusal that asks for one,
    or to ``link``."""
    readiness = getattr(error, "readiness", None)
    checks = tuple(readiness.missing) if readiness is not None else ()
    # An opening refused names its missing needs, each linked to where it is done, instead.
    fields = () if checks else _field_refusals(form, error)
    problems: Sequence[Any] = () if (fields or checks or error is None) else error.problems
    total = error.total if problems and error is not None else 0
    if checks:
        n = len(checks)
        reason = (
            f"{n} of its checklist's needs {'is' if n == 1 else 'are'} missing; nothing was changed"
        )
    elif fields:  # (the error's message would only repeat them)
        n = len(fields)
        reason = f"{n} field{' needs' if n == 1 else 's need'} correcting"
    elif error is not None:
        reason = error.message
    else:
        reason = " ".join(form.non_field_errors()) if form is not None else "refused"
    if any(field.anchor for field in fields):  # each field is a link already
        link, link_text = "", ""
    elif _asks_confirmation(error, form):  # the refused form's own confirmation box
        link, link_text = f"#{form['confirm'].id_for_label}", "Tick the confirmation"
    return Refusal(
        what=what,
        reason=reason,
        link=link,
        link_text=link_text,
        fields=fields,
        checks=checks,
        problems=problems,
        total=total,
        file_again=file_again,
    )


def _asks_confirmation(error: ServiceError | None, form) -> bool:
    code = getattr(error, "code", "")
    return code == CONFIRMATION_NEEDED and form is not None and "confirm" in form.fields


def _field_refusals(form, error: ServiceError | None) -> tuple[FieldRefusal, ...]:
    """The fields of ``form`` in error, in the form's order (its own errors, and the service's
    errors by field, ``InvalidFields``, once each), then the service's errors on fields the form
    does not have (no input to link to)."""
    if form is None:
        return ()
    by_field: dict[str, list[str]] = {}
    if form.is_bound:
        for name, messages in form.errors.items():
            if name in form.fields:
                by_field.setdefault(name, []).extend(str(m) for m in messages)
    others: list[FieldRefusal] = []
    for name, messages in (getattr(error, "field_errors", None) or {}).items():
        if name not in form.fields:
            others.append(FieldRefusal(label=name, anchor="", messages=tuple(messages)))
            continue
        known = by_field.setdefault(name, [])
        known.extend(m for m in messages if m not in known)
    in_form = tuple(
        FieldRefusal(
            label=str(form[name].label),
            anchor=form[name].id_for_label,
            messages=tuple(by_field[name]),
        )
        for name in form.fields
        if by_field.get(name)
    )
    return in_form + tuple(others)
