"""`manage.py create_task SLUG --title ...`: create a shared task from the command line, as a
draft (``open_task`` opens it once its checklist is complete)."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import BooleanField, Field

from leaderboard.models import Task
from leaderboard.services.tasks import TaskSettingsError, create_task
from leaderboard.task_settings import BY_NAME as TASK_SETTINGS_BY_NAME
from leaderboard.task_settings import TASK_SETTINGS, TaskSetting
from site_platform.commands import users_named

# Options named otherwise than their setting (kept for the scripts that use them).
ALIASES = {"label_budget": ("--budget",)}
# Set by the command's own arguments, or not at creation.
NOT_OPTIONS = {"slug", "title", "board_held"}


def setting_options() -> list[TaskSetting]:
    """The task settings the command takes as ``--options``: every row of the settings table
    but those above, so a new setting is an option without touching this file."""
    return [s for s in TASK_SETTINGS if s.name not in NOT_OPTIONS]


def _model_field(name: str) -> Field[Any, Any]:
    field = Task._meta.get_field(name)
    assert isinstance(field, Field)  # every setting is a column of Task
    return field


def _option(setting: TaskSetting) -> str:
    return "--" + setting.name.replace("_", "-")


def _help(setting: TaskSetting) -> str:
    field = _model_field(setting.name)
    text = setting.help or str(field.help_text) or str(field.verbose_name).capitalize()
    if setting.name == "measures":
        text += " Comma-separated (or a JSON list)."
    elif setting.name == "state":
        return (
            "default: draft; a new task has nothing of what opening needs yet, so open it "
            "with `open_task SLUG` after loading its data"
        )
    if field.has_default() and not callable(field.default) and field.default not in ("", None):
        text += f" (default {field.default})"
    return text.replace("%", "%%")


def setting_value(name: str, text: str) -> Any:
    """``text`` (as typed) as the value of the setting ``name``, read as its page form would
    read it; a ``CommandError`` naming the option if it cannot be."""
    if name == "measures" and not text.lstrip().startswith("["):
        return [m.strip() for m in text.split(",") if m.strip()]
    form_field = _model_field(name).formfield(required=False)
    assert form_field is not None  # every setting has a page form field
    try:
        return form_field.clean(text)
    except ValidationError as exc:
        option = _option(TASK_SETTINGS_BY_NAME[name])
        raise CommandError(f"{option}: {' '.join(exc.messages)}") from None


class Command(BaseCommand):
    help = "Create a shared task (its organizers and annotators must already have accounts)."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="short name used in URLs, e.g. febrl-2025")
        parser.add_argument("--title", required=True)
        for setting in setting_options():
            field = _model_field(setting.name)
            options: dict[str, Any] = {"dest": setting.name, "help": _help(setting)}
            if isinstance(field, BooleanField):
                options["action"] = argparse.BooleanOptionalAction
            elif field.choices:
                options["choices"] = [value for value, _ in field.choices]
            parser.add_argument(_option(setting), *ALIASES.get(setting.name, ()), **options)
        parser.set_defaults(state=Task.State.DRAFT)
        parser.add_argument(
            "--organizer", action="append", default=[], metavar="USERNAME", help="may be repeated"
        )
        parser.add_argument(
            "--annotator", action="append", default=[], metavar="USERNAME", help="may be repeated"
        )

    def handle(self, *args, slug, title, organizer, annotator, **options):
        organizers = users_named(organizer, "organizer")
        annotators = users_named(annotator, "annotator")
        settings = {}
        for setting in setting_options():
            value = options[setting.name]
            if isinstance(value, str) and setting.name not in ("state", "kind", "data_access"):
                value = setting_value(setting.name, value)
            if value is not None:
                settings[setting.name] = value
        try:
            with transaction.atomic():
                task = create_task(slug=slug, title=title, organizers=organizers, **settings)
                task.annotators.add(*annotators)
        except TaskSettingsError as exc:
            raise CommandError(exc.message) from None
        next_step = (
            f"; load its data, then `manage.py open_task {task.slug}` lists what it needs and "
            "opens it"
            if task.state == Task.State.DRAFT
            else ""
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"created task {task.slug!r} ({task.state}): target ±{task.target_half_width:g} at "
                f"{task.confidence:g} confidence, budget "
                f"{task.label_budget if task.label_budget is not None else 'unlimited'} judgments, "
                f"{len(organizers)} organizer(s), {len(annotators)} annotator(s){next_step}"
            )
        )
