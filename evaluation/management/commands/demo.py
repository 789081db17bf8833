"""`manage.py demo`: a working leaderboard on real data in one command.

Sets up (idempotently: safe to re-run) demo accounts, two teams and the task ``febrl-demo`` built
from the febrl4 slice committed under ``tests/data/febrl4_slice`` (record pairs as items, a
reference sample of true pairs, gold items with known answers, two annotators: then its
checklist is complete and it opens; four systems submitted as runs),
then, unless ``--no-serve``, runs a Celery worker (with an embedded beat: the watchdog and the
task-phase job) and the web server until Ctrl-C, and with ``--answer N`` three simulated
annotators, 95% accurate, who give the first N answers. With the default settings (SQLite,
filesystem broker) nothing else needs to be running.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files import File
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from annotation.models import GoldItem
from annotation.services import load_gold
from leaderboard.models import ReferenceItem, Run, Task, Team
from leaderboard.services.ingest import submit_and_ingest
from leaderboard.services.items import ensure_items
from leaderboard.services.reference import upload_reference
from leaderboard.services.runs import SubmissionError
from leaderboard.services.tasks import TaskNotReady, TaskSettingsError, create_task, set_task_state
from leaderboard.services.teams import add_team_member, create_team

from . import _demo_page
from ._demo_processes import DemoProcesses

DATA_DIR = Path(settings.BASE_DIR) / "tests" / "data" / "febrl4_slice"
TASK_SLUG = "febrl-demo"
REFERENCE_SIZE = 200
REFERENCE_SEED = 20240601
# Gold items (half correct pairs, half not), and the task's seed: the demo plans the same rounds
# every time.
GOLD_SIZE = 40
GOLD_SEED = 20241123
TASK_SEED = 4
SIMULATED_ANNOTATORS = 3

# (username, password, is_superuser, role); passwords are public: this is a local demo.
USERS = [
    ("admin", "admin-demo", True, "superuser"),
    ("organizer", "organizer-demo", False, "organizer of febrl-demo and task creator"),
    ("alice", "alice-demo", False, "participant, Team Alice"),
    ("bob", "bob-demo", False, "participant, Team Bob"),
    ("annotator", "annotator-demo", False, "annotator of febrl-demo"),
    ("annotator2", "annotator2-demo", False, "annotator of febrl-demo"),
]
# The task's annotators: a doubtful answer's further look needs a second one (its checklist).
ANNOTATORS = ("annotator", "annotator2")
TEAMS = {"Team Alice": "alice", "Team Bob": "bob"}
# (team, submitter, system file, run name): a spread of precision (0.32 to 1.0) and recall.
RUNS = [
    ("Team Alice", "alice", "svm_dob", "svm-dob"),
    ("Team Alice", "alice", "rule_all45_postcode", "rules-all45-postcode"),
    ("Team Bob", "bob", "rule_names90_sn_surname", "names90-sn-surname"),
    ("Team Bob", "bob", "rule_nameaddr50_given", "nameaddr50-given"),
]
TASK_SETTINGS = {
    "description": _demo_page.OVERVIEW,
    **_demo_page.SETTINGS,
    "question": "Do these two records describe the same person?",
    "target_half_width": 0.05,
    "confidence": 0.95,
    "label_budget": 2000,
    "judgments_per_item": 1,
    "gold_rate": 0.1,
}
# What the organizer may do in the admin: see everything of their tasks, edit tasks and
# (un)publish snapshots.
ORGANIZER_PERMISSIONS = [
    ("leaderboard", "add_task"),
    ("leaderboard", "change_task"),
    ("leaderboard", "change_leaderboardsnapshot"),
]
VIEWABLE_APPS = ("leaderboard", "annotation", "evaluation")


def blind_payload(payload):
    """The pair without its record ids: febrl ids (rec-12-org / rec-12-dup-0) give the answer."""
    if isinstance(payload, dict) and {"left", "right"} <= payload.keys():
        return {
            **payload,
            **{
                side: {k: v for k, v in payload[side].items() if k != "id"}
                for side in ("left", "right")
            },
        }
    return payload


class Command(BaseCommand):
    help = (
        "Set up the demo task febrl-demo (users, teams, items, reference sample, runs) and "
        "serve it with a Celery worker until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-serve",
            action="store_true",
            help="only set up the data; start no worker or web server",
        )
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument(
            "--answer",
            type=int,
            default=0,
            metavar="N",
            help="let a simulated annotator (95%% accurate) answer up to N items in the background",
        )
        parser.add_argument(
            "--data",
            type=Path,
            default=DATA_DIR,
            help="febrl4 slice directory (items.jsonl, truth.tsv, systems/)",
        )

    def handle(self, *args, no_serve, port, host, answer, data, **options):
        if answer < 0:
            raise CommandError("--answer must not be negative")
        for needed in ("items.jsonl", "truth.tsv", "systems"):
            if not (data / needed).exists():
                raise CommandError(f"demo data missing: {data / needed}")
        call_command("migrate", interactive=False, verbosity=0)
        users = self._users()
        teams = self._teams(users)
        task = self._task(users)
        self._items(task, data)
        self._reference(task, users["organizer"], data)
        self._gold(task, data)
        added = _demo_page.add_demo_files(task, users["organizer"], data, blind_payload)
        if added:
            self.stdout.write(f"data files: {added} (on the task's overview)")
        _demo_page.accept_demo_terms(task, teams, {t: users[m] for t, m in TEAMS.items()})
        self._open(task)
        self._runs(task, teams, users, data)
        self._summary(task)
        if no_serve:
            self.stdout.write("Not serving (--no-serve). Start everything with `manage.py demo`.")
            return
        processes = DemoProcesses(
            base_dir=Path(settings.BASE_DIR),
            host=host,
            port=port,
            stdout=self.stdout,
            stderr=self.stderr,
        )
        simulate = None
        if answer:
            simulate = [
                "simulate_annotators",
                TASK_SLUG,
                "--truth",
                str(data / "truth.tsv"),
                "--accuracy",
                "0.95",
                "--seed",
                "1",
                "--limit",
                str(answer),
                "--annotators",
                str(SIMULATED_ANNOTATORS),
                "--until-idle",
                "300",
            ]
        code = processes.run(simulate_args=simulate, banner=self._banner(host, port))
        if code:
            raise CommandError(
                "a demo process stopped unexpectedly (see the messages above)", returncode=code
            )

    # --- set-up ---------------------------------------------------------------------------------

    def _users(self) -> dict:
        User = get_user_model()
        users = {}
        for username, password, superuser, _role in USERS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.is_staff = user.is_superuser = superuser
                user.save()
            users[username] = user
        organizer = users["organizer"]
        if not organizer.is_staff:
            organizer.is_staff = True
            organizer.save(update_fields=["is_staff"])
        perms = Permission.objects.filter(
            content_type__app_label__in=VIEWABLE_APPS, codename__startswith="view_"
        )
        extra = [
            Permission.objects.get(content_type__app_label=app, codename=code)
            for app, code in ORGANIZER_PERMISSIONS
        ]
        organizer.user_permissions.add(*perms, *extra)
        return users

    def _teams(self, users) -> dict[str, Team]:
        teams = {}
        for name, member in TEAMS.items():
            team = Team.objects.filter(name=name).first() or create_team(
                name=name, members=[users[member]]
            )
            add_team_member(team=team, user=users[member])
            teams[name] = team
        return teams

    def _task(self, users) -> Task:
        task = Task.objects.filter(slug=TASK_SLUG).first()
        if task is None:
            try:
                task = create_task(
                    slug=TASK_SLUG,
                    title="Febrl record linkage (demo)",
                    organizers=[users["organizer"]],
                    **TASK_SETTINGS,
                )
            except TaskSettingsError as exc:
                raise CommandError(f"cannot create the demo task: {exc.message}") from None
            Task.objects.filter(pk=task.pk).update(seed=TASK_SEED)
            task.refresh_from_db()
            self.stdout.write(f"created task {TASK_SLUG}")
        task.annotators.add(*(users[name] for name in ANNOTATORS))
        return task

    def _items(self, task: Task, data: Path) -> None:
        """Every pair of the slice as an item with its (blinded) payload."""
        if task.n_items and not task.items.filter(payload__isnull=True).exists():
            return
        payloads = {}
        with (data / "items.jsonl").open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    record = json.loads(line)
                    payloads[record["key"]] = blind_payload(record.get("payload"))
        ensure_items(task=task, keys=list(payloads), payloads=payloads)
        self.stdout.write(f"items: {len(payloads)} record pairs")

    def _reference(self, task: Task, organizer, data: Path) -> None:
        """A fixed random sample of the true pairs, each its own group."""
        if ReferenceItem.objects.filter(task=task).exists():
            return
        truth = [
            line.rstrip("\r\n")
            for line in (data / "truth.tsv").open(encoding="utf-8")
            if line.strip()
        ]
        sample = random.Random(REFERENCE_SEED).sample(
            sorted(truth), min(REFERENCE_SIZE, len(truth))
        )
        body = "".join(f"{key}\t{key}\n" for key in sample).encode()
        try:
            n = upload_reference(
                task=task, user=organizer, upload=io.BytesIO(body), file_name="reference.tsv"
            )
        except SubmissionError as exc:
            raise CommandError(f"demo reference sample refused: {exc.message}") from None
        self.stdout.write(f"reference sample: {n} true pairs")

    def _gold(self, task: Task, data: Path) -> None:
        """A fixed sample of pairs with known answers, half of them true: what the engine
        measures each annotator's error rates against, with their agreement."""
        if GoldItem.objects.filter(task=task).exists():
            return
        truth = {
            line.rstrip("\r\n")
            for line in (data / "truth.tsv").open(encoding="utf-8")
            if line.strip()
        }
        keys = sorted(task.items.values_list("key", flat=True))
        rng = random.Random(GOLD_SEED)
        true = rng.sample([k for k in keys if k in truth], GOLD_SIZE // 2)
        false = rng.sample([k for k in keys if k not in truth], GOLD_SIZE - GOLD_SIZE // 2)
        lines = [f"{k}\tcorrect" for k in true] + [f"{k}\tincorrect" for k in false]
        loaded = load_gold(task=task, lines=lines)
        self.stdout.write(f"gold items: {loaded.created} pairs with known answers")

    def _open(self, task: Task) -> None:
        """Open the task, its checklist complete (created as a draft, as every task is)."""
        if task.state == Task.State.OPEN:
            return
        try:
            set_task_state(task=task, state=Task.State.OPEN)
        except TaskNotReady as exc:
            raise CommandError(f"the demo task cannot open: {exc.message}") from None
        self.stdout.write(f"task {TASK_SLUG} opened: its checklist is complete")

    def _runs(self, task: Task, teams, users, data: Path) -> None:
        for team_name, username, system, run_name in RUNS:
            team = teams[team_name]
            done = (
                Run.objects.filter(task=task, team=team, name=run_name)
                .exclude(state__in=(Run.State.REJECTED, Run.State.FAILED))
                .exists()
            )
            if done:
                continue
            path = data / "systems" / f"{system}.tsv"
            try:
                with path.open("rb") as f:
                    run = submit_and_ingest(
                        task=task,
                        team=team,
                        user=users[username],
                        upload=File(f, name=path.name),
                        file_name=path.name,
                        name=run_name,
                        description=f"febrl4 system {system}",
                    )
            except SubmissionError as exc:
                raise CommandError(f"demo run {run_name} refused: {exc.message}") from None
            self.stdout.write(f"run {run.name} ({team_name}): {run.n_predictions} predictions")

    # --- output ---------------------------------------------------------------------------------

    def _summary(self, task: Task) -> None:
        task.refresh_from_db()
        runs = Run.objects.filter(task=task)
        states = ", ".join(sorted(set(runs.values_list("state", flat=True))))
        self.stdout.write(
            self.style.SUCCESS(
                f"demo task {task.slug}: {task.n_items} items, "
                f"{ReferenceItem.objects.filter(task=task).count()} reference items, "
                f"{runs.count()} runs ({states})"
            )
        )
        self.stdout.write("Logins (user / password; unchanged if the account already existed):")
        for username, password, _superuser, role in USERS:
            self.stdout.write(f"  {username:10s} {password:16s} {role}")

    def _banner(self, host: str, port: int) -> str:
        base = f"http://{host}:{port}"
        return "\n".join(
            [
                "",
                "The demo is running. Press Ctrl-C to stop it.",
                f"  Task page    {base}/tasks/{TASK_SLUG}/overview/   (rules, terms, data)",
                f"  Leaderboard  {base}/tasks/{TASK_SLUG}/",
                f"  Annotate     {base}/annotate/{TASK_SLUG}/   (log in as annotator)",
                f"  My runs      {base}/tasks/{TASK_SLUG}/runs/   (log in as alice or bob)",
                f"  Sign up      {base}/accounts/signup/   (the verification mail is printed here)",
                f"  Teams        {base}/teams/   (make one, invite by a link)",
                f"  Organize     {base}/tasks/{TASK_SLUG}/organize/   (log in as organizer)",
                f"  New task     {base}/tasks/new/   (organizer: a task creator)",
                f"  Admin        {base}/admin/   (admin or organizer)",
                f"  API          {base}/api/",
                "Mails (sign-up verification, password reset) are printed in this terminal: the "
                "demo sends none (console mail backend; set EMAIL_HOST for SMTP).",
                "",
            ]
        )
