"""Email domains of a task's policy (``Task.allowed_email_domains``, ``blocked_email_domains``):
lists of domains, comma- or line-separated, each matching itself and its subdomains."""

from __future__ import annotations

import re

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(rf"^(?=.{{1,253}}$)({_LABEL}\.)*{_LABEL}$")


def parse_domains(text: str) -> list[str]:
    """The domains of a list as typed (lower-cased, blanks and a leading ``@`` dropped)."""
    parts = re.split(r"[,\s]+", (text or "").lower())
    return [part.removeprefix("@") for part in parts if part.strip()]


def invalid_domains(text: str) -> list[str]:
    """The entries of a list that are not domain names."""
    return [domain for domain in parse_domains(text) if not _DOMAIN.match(domain)]


def matches(domain: str, listed: list[str]) -> str | None:
    """The entry of ``listed`` that ``domain`` is (or is a subdomain of), if any."""
    domain = domain.lower()
    for entry in listed:
        if domain == entry or domain.endswith("." + entry):
            return entry
    return None
