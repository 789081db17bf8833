"""Forms of the server-rendered pages: they parse and show input; services validate and write."""

from __future__ import annotations

from typing import cast

from allauth.account.forms import LoginForm
from django import forms
from django.db import models
from django.forms.fields import InvalidJSONInput
from django.forms.models import fields_for_model, model_to_dict

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES
from evaluation.core.task_design import design_names

from . import task_settings
from .models import Run, Task, TaskFile, Team
from .services.sign_in import normalized_login


class NestingSafeJSONField(forms.JSONField):
    """A JSON form field that refuses input nested too deep to decode (``json.loads`` raises
    ``RecursionError`` there, which Django's field lets through as a 500)."""

    def to_python(self, value):
        try:
            return super().to_python(value)
        except RecursionError:
            raise forms.ValidationError("is nested too deeply", code="invalid") from None

    def bound_data(self, data, initial):
        try:
            return super().bound_data(data, initial)
        except RecursionError:  # shown back as typed, as invalid JSON is
            return InvalidJSONInput(data)


def task_formfield(model_field, **kwargs):
    """The form field of one of a task's fields, as ``fields_for_model`` would make it, but
    JSON decoded safely (``formfield_callback`` of the task's forms and the admin's)."""
    if isinstance(model_field, models.JSONField):
        kwargs.setdefault("form_class", NestingSafeJSONField)
    return model_field.formfield(**kwargs)


def task_fields(names) -> dict:
    """The form fields of the task's fields ``names``."""
    return fields_for_model(Task, fields=names, formfield_callback=task_formfield)


class SignInForm(LoginForm):
    """allauth's sign-in form (``ACCOUNT_FORMS``), the login typed normalised as addresses are
    stored (``x@EXAMPLE.net`` in fullwidth letters signs in ``x@example.net``)."""

    def clean_login(self) -> str:
        return normalized_login(super().clean_login())


class ServiceErrorsForm(forms.Form):
    """A form that shows a service's ``field_errors`` (``InvalidFields``) by its fields (the
    others above the form)."""

    def add_service_errors(self, field_errors: dict[str, list[str]]) -> None:
        for name, messages in field_errors.items():
            for message in messages:
                self.add_error(name if name in self.fields else None, message)


class RunUploadForm(forms.Form):
    file = forms.FileField(help_text="TSV (key, tab, score per line) or JSONL.")
    name = forms.CharField(
        max_length=120,
        required=False,
        help_text="Shown on the leaderboard (default: the file name without its extension).",
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(), required=False, empty_label="— choose a team —"
    )

    def __init__(self, *args, teams: list[Team], **kwargs):
        super().__init__(*args, **kwargs)
        self.teams = teams
        team_field = cast("forms.ModelChoiceField[Team]", self.fields["team"])
        team_field.queryset = Team.objects.filter(pk__in=[t.pk for t in teams]).order_by("name")
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


class OrganizerUploadForm(forms.Form):
    """A file an organizer uploads on the organize page (reference sample, gold items); its
    service parses it and lists its problems by line."""

    file = forms.FileField()


class PoolUploadForm(OrganizerUploadForm):
    payloads = forms.FileField(
        required=False, help_text='JSON Lines {"key", "payload"}: what annotators see.'
    )


class ReferenceSampleDrawForm(forms.Form):
    """How many candidate documents to draw for the reference sample, the draw's seed, and
    whether it replaces the sample (confirmed) instead of adding to it."""

    size = forms.IntegerField(min_value=1, label="Documents to draw")
    seed = forms.IntegerField(
        min_value=0,
        required=False,
        help_text="Leave empty for a random seed (recorded, like the documents drawn).",
    )
    replace = forms.BooleanField(
        required=False,
        label="Replace the reference sample",
        help_text="Draw from every document; once complete, this draw's true candidates are the "
        "whole sample. Unticked, the draw takes documents not drawn yet and adds to the sample.",
    )
    confirm = forms.BooleanField(
        required=False,
        label="Yes, replace the current sample",
        help_text="Needed to replace a sample that has items (it stays in use until the new "
        "draw is complete).",
    )


class CandidatesUploadForm(OrganizerUploadForm):
    """The documents' candidate items of a reference sample built in the product."""

    confirm = forms.BooleanField(
        required=False,
        label="Start a new sampling frame",
        help_text="Needed once draws of the current candidates built the reference sample: new "
        "candidates forget the documents drawn so far, and the next draw can only replace the "
        "sample.",
    )


class RunDetailsForm(ServiceErrorsForm):
    """A run's public name, description and link; ``update_run_details`` validates them."""

    name = forms.CharField(max_length=Run._meta.get_field("name").max_length)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}))
    link = forms.CharField(
        required=False,
        max_length=Run._meta.get_field("link").max_length,
        help_text="Paper, code or system description (http or https).",
        widget=forms.URLInput(),
    )

    @classmethod
    def for_run(cls, run: Run, data=None) -> RunDetailsForm:
        return cls(
            data, initial={"name": run.name, "description": run.description, "link": run.link}
        )


# The settings an organizer edits on the organize pages' Settings and Phases sections
# (leaderboard.task_settings says which): hold/publish are buttons of their own, the task page's
# text (overview, rules, terms) has a form of its own, TaskPageTextForm.
TASK_SETTING_FIELDS = task_settings.names("settings", "phases")
# Shown and read in UTC (the site's time zone); an ISO 8601 offset (+02:00) is honoured too.
DATE_INPUT_FORMAT = "%Y-%m-%d %H:%M"
PHASE_DATE_FIELDS = ("submissions_open_at", "submissions_close_at", "reveal_at")
# The organize pages' Phases section edits these; its Settings section the others.
PHASE_FIELDS = task_settings.names("phases")
SETTINGS_PAGE_FIELDS = task_settings.names("settings")
# The settings in groups, as the Settings section shows them (each setting in one group).
SETTING_GROUPS = task_settings.groups(TASK_SETTING_FIELDS)


def _set_help(form: forms.Form) -> None:
    """Give the form's fields the settings table's help text, where it has one."""
    for name, field in form.fields.items():
        if name in task_settings.BY_NAME and task_settings.BY_NAME[name].help:
            field.help_text = task_settings.BY_NAME[name].help


def _set_rows(form: forms.Form, **attrs: str) -> None:
    """Give the form's text areas their height from the settings table (and ``attrs``)."""
    for name, field in form.fields.items():
        rows = task_settings.BY_NAME[name].rows if name in task_settings.BY_NAME else None
        if rows is not None and isinstance(field.widget, forms.Textarea):
            field.widget.attrs.update({"rows": rows, **attrs})


class TaskFieldsForm(ServiceErrorsForm):
    """A form of some of a task's fields: ``update_task`` validates and saves the ones it
    changed (``leaderboard.views.organize.save_task_form``)."""

    def changed_settings(self) -> dict:
        # A disabled field keeps its value, but Django's JSONField says it changed whenever its
        # input was sent at all.
        return {
            name: self.cleaned_data[name]
            for name in self.changed_data
            if name in self.cleaned_data and not self.fields[name].disabled
        }


class TaskSettingsForm(TaskFieldsForm):
    """The task's organizer-editable settings (``field_names``: those of one section; all by
    default) that apply to its kind; ``update_task`` validates them as a whole. The design is
    picked from its kind's (any name sent goes to the validator, which says why it refuses
    one); the settings frozen once runs exist are shown disabled then."""

    def __init__(self, *args, task: Task, field_names=TASK_SETTING_FIELDS, **kwargs):
        field_names = [n for n in field_names if task.kind in task_settings.BY_NAME[n].kinds]
        initial = model_to_dict(task, fields=field_names)
        for name in PHASE_DATE_FIELDS:
            # Shown to the minute: a date set to the second (API) that comes back unedited is
            # then unchanged, and keeps its stored value.
            if initial.get(name) is not None:
                initial[name] = initial[name].replace(second=0, microsecond=0)
        kwargs.setdefault("initial", initial)
        super().__init__(*args, **kwargs)
        self.fields.update(task_fields(field_names))
        _set_rows(self)
        _set_help(self)
        if "design" in self.fields:
            names = dict.fromkeys((*design_names(task.kind), task.design))  # a stored one too
            self.fields["design"] = forms.CharField(
                max_length=Task._meta.get_field("design").max_length,
                widget=forms.Select(choices=[(name, name) for name in names]),
                help_text=self.fields["design"].help_text,
            )
        frozen = task_settings.FROZEN_ONCE_RUNS & set(self.fields)
        if frozen and task.pk is not None and task.runs.exists():
            for name in frozen:
                self.fields[name].disabled = True
                self.fields[name].help_text += " Fixed: the task has runs."
        for name in PHASE_DATE_FIELDS:
            if name not in self.fields:
                continue
            field = self.fields[name]
            field.widget = forms.DateTimeInput(
                format=DATE_INPUT_FORMAT, attrs={"placeholder": "YYYY-MM-DD HH:MM"}
            )
            field.label = f"{field.label} (UTC)"

    def groups(self) -> list[tuple[str, list]]:
        """The form's fields in :data:`SETTING_GROUPS`, as the page shows them."""
        return [
            (legend, [self[name] for name in names if name in self.fields])
            for legend, names in SETTING_GROUPS
            if any(name in self.fields for name in names)
        ]


# What an organizer sets when creating a task on its page; the rest is on the organize page.
TASK_CREATE_FIELDS = task_settings.names(create=True)


class TaskCreateForm(ServiceErrorsForm):
    """A new task's settings; ``create_task`` validates them as a whole. It starts as a draft
    (seen by its organizers only), and opens from its organize page once its checklist is
    complete (no state is chosen here: a new task has none of what opening needs)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields.update(task_fields(TASK_CREATE_FIELDS))
        self.fields[
            "slug"
        ].help_text = (
            "Letters, digits, hyphens and underscores: the task's address, /tasks/<slug>/."
        )
        for field in self.fields.values():  # a compact page: every text area is small here
            if isinstance(field.widget, forms.Textarea):
                field.widget.attrs["rows"] = 3
        self.fields["measures"] = forms.MultipleChoiceField(
            choices=[(m, m) for m in CLOSED_POOL_MEASURES],
            required=False,
            widget=forms.CheckboxSelectMultiple,
            help_text="What the board shows. Open tasks: precision, recall, f1; closed pools: "
            "any of these. None ticked: precision, recall and f1.",
        )

    def task_settings(self) -> dict:
        """The cleaned settings for ``create_task`` (no measures ticked: the task's default)."""
        data = dict(self.cleaned_data)
        if not data.get("measures"):
            data.pop("measures", None)
        return data


# The task page's text and who may download its data files: a form of the organize page.
TASK_PAGE_TEXT_FIELDS = task_settings.names("page_text")


class TaskPageTextForm(TaskFieldsForm):
    """The task page: overview (``description``), rules and terms in Markdown, and who may
    download the data files; ``update_task`` validates them."""

    def __init__(self, *args, task: Task, **kwargs):
        kwargs.setdefault("initial", model_to_dict(task, fields=TASK_PAGE_TEXT_FIELDS))
        super().__init__(*args, **kwargs)
        self.fields.update(task_fields(TASK_PAGE_TEXT_FIELDS))
        self.fields["description"].label = "Overview"
        _set_rows(self, **{"data-markdown-preview": "1"})


class TaskFileForm(ServiceErrorsForm):
    """A data file for participants: its content and how the task page lists it; changing a
    file, the content is optional (empty: kept)."""

    file = forms.FileField()
    kind = forms.ChoiceField(choices=TaskFile.Kind.choices, initial=TaskFile.Kind.INPUT_DATA)
    title = forms.CharField(
        max_length=TaskFile._meta.get_field("title").max_length,
        required=False,
        help_text="Shown on the task page (empty: the file's name).",
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, file_required: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["file"].required = file_required
        if not file_required:
            self.fields["file"].help_text = "Choose a file to replace the content (empty: kept)."


class TermsAcceptForm(forms.Form):
    """A team accepts the version of the terms the page showed (``digest``)."""

    team = forms.IntegerField(min_value=1)
    digest = forms.CharField(max_length=64)
    next = forms.ChoiceField(
        choices=[("submit", "submit"), ("overview", "overview")], required=False
    )
