from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.db.models.signals import m2m_changed

        from leaderboard.models import Team

        from .signals import (
            Membership,
            record_conflicts_of_new_annotators,
            revoke_leases_of_removed_annotators,
            revoke_leases_on_joining,
        )

        m2m_changed.connect(
            revoke_leases_on_joining,
            sender=Team.members.through,
            dispatch_uid="annotation.revoke_leases_on_joining",
        )
        m2m_changed.connect(
            revoke_leases_of_removed_annotators,
            sender=Membership,
            dispatch_uid="annotation.revoke_leases_of_removed_annotators",
        )
        m2m_changed.connect(
            record_conflicts_of_new_annotators,
            sender=Membership,
            dispatch_uid="annotation.record_conflicts_of_new_annotators",
        )
