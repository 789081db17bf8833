"""Email addresses and domains in the one form the site stores, mails and compares, and the
domains of a task's policy (``Task.allowed_email_domains``, ``blocked_email_domains``): lists
of domains, comma- or line-separated, each matching itself and its subdomains.

An address is normalised once, where it enters (sign-up, a new address, a password reset, the
sign-in form, invitations by mail; ``leaderboard.signals`` for any other write): NFKC, lower
case, and its domain in the ASCII-compatible form of IDNA (UTS 46), so ``x@example.net`` spelt
in fullwidth letters, or ``x@EXAMPLE.net``, is ``x@example.net``, the mailbox the mail would
reach anyway. ASCII rather than Unicode because that is what mail servers are given and what a
policy's domains are checked against (letters, digits, hyphens); a domain an organizer types
in Unicode is converted the same way.
"""

from __future__ import annotations

import re
import unicodedata

import idna

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(rf"^(?=.{{1,253}}$)({_LABEL}\.)*{_LABEL}$")


def normalize_domain(domain: str) -> str:
    """``domain`` as mail reaches it: NFKC, lower case, no final dot, IDNA's ASCII form
    (``bücher.example`` → ``xn--bcher-kva.example``; invisible characters UTS 46 ignores are
    dropped). Raises :class:`ValueError` for a name IDNA refuses."""
    text = unicodedata.normalize("NFKC", domain).strip().lower().rstrip(".")
    if text.isascii():
        return text
    try:
        return idna.encode(text, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise ValueError(f"{domain!r} is not a domain name ({exc})") from None


def normalize_email(address: str) -> str:
    """``address`` in the site's one form: NFKC, lower case, its domain by
    :func:`normalize_domain` (raising :class:`ValueError` for a domain IDNA refuses). Text
    without an ``@`` comes back NFKC and lower-cased, for the validators to refuse."""
    text = unicodedata.normalize("NFKC", address).strip()
    local, at, domain = text.rpartition("@")
    if not at:
        return text.lower()
    return f"{local.lower()}@{normalize_domain(domain)}"


def domain_of(address: str) -> str:
    """The normalised domain of an address (``""`` if it has none or IDNA refuses it)."""
    try:
        return normalize_email(address).rpartition("@")[2]
    except ValueError:
        return ""


def parse_domains(text: str) -> list[str]:
    """The domains of a list as typed (normalised like an address's domain, blanks and a
    leading ``@`` dropped; an entry IDNA refuses is kept as typed, for
    :func:`invalid_domains`)."""
    parts = re.split(r"[,\s]+", unicodedata.normalize("NFKC", text or "").lower())
    domains = []
    for part in parts:
        if not part.strip():
            continue
        entry = part.removeprefix("@")
        try:
            domains.append(normalize_domain(entry))
        except ValueError:
            domains.append(entry)
    return domains


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
