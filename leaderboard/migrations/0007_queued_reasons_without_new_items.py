"""Drop the new-items count from stored ``queued`` reasons: it told a team whether another team
had already predicted its keys (the count stays in ``Run.n_new_items``, for organizers)."""

import re

from django.db import migrations

NEW_ITEMS = re.compile(r"^([\d,]+ predictions) \([\d,]+ new items\)$")


def drop_new_items(apps, schema_editor):
    for name in ("Run", "RunEvent"):
        model = apps.get_model("leaderboard", name)
        rows = model.objects.filter(state="queued", reason__endswith=" new items)")
        for pk, reason in rows.values_list("pk", "reason").iterator():
            match = NEW_ITEMS.match(reason)
            if match:
                model.objects.filter(pk=pk).update(reason=match.group(1))


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0006_throttle_cache_table")]

    operations = [migrations.RunPython(drop_new_items, migrations.RunPython.noop)]
