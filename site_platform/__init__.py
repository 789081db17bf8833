"""What every app of the site stands on and that is not about tasks or runs: the one error type
of the services and the APIs' handler of it (:mod:`.errors`, :mod:`.api.errors`), the base of
both JSON APIs (:mod:`.api`), downloads (:mod:`.downloads`), admin bases (:mod:`.admin`), URL tables
(:mod:`.urls`) and the helpers of management commands (:mod:`.commands`).

It imports no app of the project (an import-linter contract): ``leaderboard`` and
``annotation`` import it.
"""
