"""Names that look like ``Team Alice`` (issue 29, N10): the probe's and a few more."""

LOOKALIKES_OF_TEAM_ALICE = [
    "team alice",
    "TEAM ALICE",
    "Team\u00a0Alice",  # a no-break space
    "team\u200b alice",  # a zero-width space
    "team  alice ",
    "te\u0430m alice",  # a Cyrillic a
    "\u0422eam \u0410lice",  # a Cyrillic Te and A
    "\uff54\uff45\uff41\uff4d \uff41\uff4c\uff49\uff43\uff45",  # fullwidth letters
    "team a\u00adlice",  # a soft hyphen
    "team alice\ufe0f",  # a variation selector
]
