"""Admin for the site's own mail: the notifications owed and sent, and the kinds people turned
off. Superusers only: who was mailed about what is no organizer's business."""

from __future__ import annotations

from django.contrib import admin

from site_platform.admin import SuperusersOnly, ViewOnly

from ..models import MailOptOut, Notification


@admin.register(Notification)
class NotificationAdmin(SuperusersOnly, ViewOnly, admin.ModelAdmin):
    """Each mail owed to one person for one event, and what became of it (sent, held while the
    board hides the state, skipped and why, failed); written and sent by the product."""

    list_display = ("kind", "recipient", "state", "note", "attempts", "created_at", "sent_at")
    list_filter = ("kind", "state")
    list_select_related = ("recipient",)
    search_fields = ("recipient__username",)
    fields = (
        "kind",
        "recipient",
        "run_event",
        "approval",
        "state",
        "note",
        "attempts",
        "created_at",
        "state_changed_at",
        "sent_at",
    )
    readonly_fields = fields


@admin.register(MailOptOut)
class MailOptOutAdmin(SuperusersOnly, ViewOnly, admin.ModelAdmin):
    """The kinds of notification people turned off (on their mail settings page or the API)."""

    list_display = ("user", "kind", "created_at")
    list_filter = ("kind",)
    search_fields = ("user__username",)
    fields = list_display
    readonly_fields = fields
