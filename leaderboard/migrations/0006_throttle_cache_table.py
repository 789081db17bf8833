"""The database table of the throttle cache (CACHES["throttle"] without Redis).

Made here, whatever the cache settings, so that `migrate` is the only setup step and a site that
drops Redis later finds the table ready.
"""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

TABLE = "throttle_cache"  # config.settings.THROTTLE_CACHE_TABLE (apps do not import config)


def create_table(apps, schema_editor):
    command = CreateCacheTable()
    command.verbosity = 0  # set by handle(), read when the table already exists
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)


def drop_table(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0005_api_tokens_hashed"),
    ]

    operations = [
        migrations.RunPython(create_table, drop_table),
    ]
