"""The throttle cache's table unlogged on PostgreSQL.

Every API request writes its caller's throttle counter (CACHES["throttle"] without Redis). The
counters are disposable: an unlogged table writes no WAL, so the counter's commit waits for no
disk flush, and after a crash PostgreSQL empties it, which only lifts the limits for a minute.
Other databases keep the table as it is.
"""

from django.db import migrations

TABLE = "throttle_cache"  # config.settings.THROTTLE_CACHE_TABLE (apps do not import config)


def _set(schema_editor, persistence: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(TABLE)} SET {persistence}")


def unlogged(apps, schema_editor):
    _set(schema_editor, "UNLOGGED")


def logged(apps, schema_editor):
    _set(schema_editor, "LOGGED")


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0027_task_settings_help"),
    ]

    operations = [
        migrations.RunPython(unlogged, logged),
    ]
