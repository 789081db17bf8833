"""Server-rendered pages: the task list, the leaderboard, run upload, run lists and run details.

Each view validates its input, calls one service or page selector, and renders. Results come from
stored snapshots and estimates only: nothing here computes statistics.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from . import page_selectors
from .models import Team
from .services.runs import SubmissionError, submit_run

# HTTP status of each refusal of an upload (the page is re-rendered with the form).
SUBMISSION_STATUS = {
    "rejected": 400,
    "invalid": 400,
    "too_large": 413,
    "not_team_member": 403,
    "task_closed": 409,
    "over_quota": 429,
}


class RunUploadForm(forms.Form):
    file = forms.FileField(help_text="TSV (key, tab, score per line) or JSONL.")
    name = forms.CharField(max_length=120, required=False,
                           help_text="Shown on the leaderboard (default: the file name).")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    team = forms.ModelChoiceField(queryset=Team.objects.none(), required=False,
                                  empty_label="— choose a team —")

    def __init__(self, *args, teams: list[Team], **kwargs):
        super().__init__(*args, **kwargs)
        self.teams = teams
        self.fields["team"].queryset = Team.objects.filter(pk__in=[t.pk for t in teams]) \
            .order_by("name")
        if len(teams) == 1:
            self.fields["team"].widget = forms.HiddenInput()
            self.fields["team"].initial = teams[0].pk

    def clean_team(self):
        team = self.cleaned_data.get("team")
        if team is None and len(self.teams) == 1:
            return self.teams[0]
        if team is None:
            raise forms.ValidationError("Choose the team this run is for.")
        return team


def _task_or_404(request, slug: str):
    task = page_selectors.visible_task(request.user, slug)
    if task is None:
        raise Http404("No such task.")
    return task


def home(request):
    return render(request, "leaderboard/home.html",
                  {"tasks": page_selectors.task_list(request.user)})


def board(request, slug: str):
    task = _task_or_404(request, slug)
    return render(request, "leaderboard/board.html", {
        "task": task,
        "board": page_selectors.board_for(task),
        "is_organizer": page_selectors.is_organizer(task=task, user=request.user),
    })


@login_required
@require_http_methods(["GET", "POST"])
def submit(request, slug: str):
    task = _task_or_404(request, slug)
    teams = page_selectors.teams_of(request.user)
    context = {"task": task, "teams": teams}
    if not teams:
        return render(request, "leaderboard/submit.html", context, status=403)
    if request.method != "POST":
        context["form"] = RunUploadForm(teams=teams)
        return render(request, "leaderboard/submit.html", context)

    form = RunUploadForm(request.POST, request.FILES, teams=teams)
    context["form"] = form
    if not form.is_valid():
        return render(request, "leaderboard/submit.html", context, status=400)
    upload = form.cleaned_data["file"]
    try:
        run = submit_run(task=task, team=form.cleaned_data["team"], user=request.user,
                         upload=upload, file_name=upload.name,
                         name=form.cleaned_data["name"],
                         description=form.cleaned_data["description"])
    except SubmissionError as exc:
        context["error"] = exc
        return render(request, "leaderboard/submit.html", context,
                      status=SUBMISSION_STATUS.get(exc.code, 400))
    return redirect("run_detail", run_id=run.pk)


@login_required
def task_runs(request, slug: str):
    task = _task_or_404(request, slug)
    return render(request, "leaderboard/runs.html", {
        "task": task,
        "runs": page_selectors.runs_for_viewer(task=task, user=request.user),
        "is_organizer": page_selectors.is_organizer(task=task, user=request.user),
    })


@login_required
def run_detail(request, run_id: int):
    run = page_selectors.run_for_viewer(run_id=run_id, user=request.user)
    if run is None:
        raise Http404("No such run.")
    return render(request, "leaderboard/run_detail.html", {
        "run": run,
        "task": run.task,
        "events": page_selectors.run_events(run),
        "latest": page_selectors.latest_estimates(run=run, user=request.user),
    })
