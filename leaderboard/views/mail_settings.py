"""The page where a person turns each kind of notification by mail on or off (every such mail
links here)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from .. import selectors
from ..models import MailKind
from ..services.notifications import set_mail_preferences


@login_required
@require_http_methods(["GET", "POST"])
def mail_settings(request):
    if request.method == "POST":
        # A checkbox left unticked is not sent: every kind not ticked is turned off.
        chosen = {kind: kind in request.POST.getlist("on") for kind in MailKind.values}
        set_mail_preferences(user=request.user, **chosen)
        off = [MailKind(kind).label for kind, on in chosen.items() if not on]
        messages.success(
            request,
            "Mail settings saved: "
            + ("every notification is on." if not off else "off when " + "; when ".join(off) + "."),
        )
        return redirect("mail_settings")
    preferences = selectors.mail_preferences(request.user)
    return render(
        request,
        "leaderboard/mail_settings.html",
        {"kinds": [(kind, MailKind(kind).label, on) for kind, on in preferences.items()]},
    )
