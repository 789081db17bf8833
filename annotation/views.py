"""Annotator pages: the tasks one annotates, and one pending item at a time.

The item page shows the task's question and the item's payload only: never which run predicted
the item, its team or any score, so that answers stay blind. Each rendered page carries a fresh
``client_id``; posting the same page twice records the answer once.
"""

from __future__ import annotations

import json
import uuid

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from leaderboard import page_selectors

from .models import Judgment
from .selectors import next_request_for, queue_counts
from .services import JudgmentError, submit_judgment

# Longer than this, the time spent on an item is not a measurement (the tab sat open).
MAX_SECONDS_SPENT = 3600.0


class JudgmentForm(forms.Form):
    request_id = forms.IntegerField(min_value=1)
    answer = forms.ChoiceField(choices=Judgment.Answer.choices)
    client_id = forms.UUIDField()
    seconds_spent = forms.FloatField(required=False, min_value=0)


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def payload_display(payload) -> dict:
    """How to lay out a payload: side by side for ``left``/``right`` records, else key/value."""
    if (isinstance(payload, dict) and isinstance(payload.get("left"), dict)
            and isinstance(payload.get("right"), dict)):
        left, right = payload["left"], payload["right"]
        fields = list(left) + [k for k in right if k not in left]
        rows = [{"field": f, "left": _text(left.get(f)), "right": _text(right.get(f)),
                 "differs": _text(left.get(f)) != _text(right.get(f))} for f in fields]
        extra = [{"field": k, "value": _text(v)} for k, v in payload.items()
                 if k not in ("left", "right")]
        return {"kind": "pair", "rows": rows, "extra": extra}
    if isinstance(payload, dict):
        return {"kind": "table", "rows": [{"field": k, "value": _text(v)}
                                          for k, v in payload.items()]}
    return {"kind": "value", "value": _text(payload)}


@login_required
def home(request):
    rows = [{"task": task, "counts": queue_counts(task=task)}
            for task in page_selectors.tasks_annotated_by(request.user)]
    return render(request, "annotation/home.html", {"rows": rows})


@login_required
@require_http_methods(["GET", "POST"])
def annotate(request, slug: str):
    task = page_selectors.annotatable_task(slug=slug)
    if task is None:
        raise Http404("No such task.")
    if not page_selectors.is_annotator(task=task, user=request.user):
        return render(request, "annotation/not_annotator.html", {"task": task}, status=403)
    if request.method == "POST":
        return _answer(request, task)

    pending = next_request_for(task=task, annotator=request.user)
    context = {"task": task, "counts": queue_counts(task=task), "pending": pending}
    if pending is not None:
        payload = pending.item.payload
        context.update(
            display=payload_display(payload) if payload not in (None, {}, "") else None,
            fallback_key=pending.item.key,
            client_id=uuid.uuid4(),
            answers={a.name.lower(): a.value for a in Judgment.Answer},
        )
    return render(request, "annotation/annotate.html", context)


def _answer(request, task):
    form = JudgmentForm(request.POST)
    if not form.is_valid():
        messages.error(request, "That answer could not be read; please answer the item again.")
        return redirect("annotation:task", slug=task.slug)
    seconds = form.cleaned_data["seconds_spent"]
    if seconds is not None and seconds > MAX_SECONDS_SPENT:
        seconds = None
    try:
        submit_judgment(request_id=form.cleaned_data["request_id"], annotator=request.user,
                        answer=form.cleaned_data["answer"],
                        client_id=form.cleaned_data["client_id"], seconds_spent=seconds)
    except JudgmentError as exc:
        messages.error(request, str(exc))
    return redirect("annotation:task", slug=task.slug)
