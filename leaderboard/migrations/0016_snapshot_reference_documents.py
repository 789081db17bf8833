"""How many documents a snapshot's reference items come from: the board says what recall rests
on, in items and documents. Stored snapshots get the count where it is still known: those without
reference items (0), and those of the task's current reference sample (its version and size);
the others, whose sample has changed since, stay unknown (null)."""

from django.db import migrations, models
from django.db.models import Count, Q


def count_documents(apps, schema_editor):
    Snapshot = apps.get_model("leaderboard", "LeaderboardSnapshot")
    Task = apps.get_model("leaderboard", "Task")
    ReferenceItem = apps.get_model("leaderboard", "ReferenceItem")
    Snapshot.objects.filter(n_reference=0).update(n_reference_documents=0)
    for task_id, version in Task.objects.values_list("pk", "reference_version").iterator():
        counts = ReferenceItem.objects.filter(task_id=task_id).aggregate(
            items=Count("pk"),
            grouped=Count("pk", filter=~Q(group="")),
            groups=Count("group", distinct=True, filter=~Q(group="")),
        )
        if not counts["items"]:
            continue
        Snapshot.objects.filter(
            task_id=task_id, reference_version=version, n_reference=counts["items"]
        ).update(n_reference_documents=counts["groups"] + counts["items"] - counts["grouped"])


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0015_reference_sample_cancel")]

    operations = [
        migrations.AddField(
            model_name="leaderboardsnapshot",
            name="n_reference_documents",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(count_documents, migrations.RunPython.noop),
    ]
