"""Addresses stored before they were normalised where they enter (issue 29, N2) get the one
spelling (``leaderboard.email_domains.normalize_email``: NFKC, lower case, IDNA's ASCII
domain). One whose normalised form is another row's address (one mailbox, two accounts) is left
as it is and reported, for an administrator to decide: nothing is dropped or merged here."""

from django.conf import settings
from django.db import migrations

from leaderboard.email_domains import normalize_email


def _normalized(address: str) -> str | None:
    try:
        normalized = normalize_email(address)
    except ValueError:
        return None
    return None if normalized == address else normalized


def normalize_stored(apps, schema_editor) -> list[str]:
    """Normalise the stored addresses; returns one line per collision left as it was."""
    collisions = []
    EmailAddress = apps.get_model("account", "EmailAddress")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    for model, owner in ((EmailAddress, "user_id"), (User, "pk")):
        for row in model.objects.exclude(email="").iterator():
            normalized = _normalized(row.email)
            if normalized is None:
                continue
            taken = model.objects.filter(email__iexact=normalized).exclude(pk=row.pk).first()
            if taken is None:
                model.objects.filter(pk=row.pk).update(email=normalized)
                continue
            collisions.append(
                f"{model.__name__} {row.email!r} (user {getattr(row, owner)}) is "
                f"{normalized!r}, already the address of user {getattr(taken, owner)}: left as "
                "it is"
            )
    return collisions


def normalize_and_report(apps, schema_editor) -> None:
    for line in normalize_stored(apps, schema_editor):
        print(f"  email addresses: {line}")


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0022_reference_sample_settle"),
        ("account", "0009_emailaddress_unique_primary_email"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(normalize_and_report, migrations.RunPython.noop)]
