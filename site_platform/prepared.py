"""Queries built and compiled once per process, then run with new values.

For the hottest reads only: the annotator's progress block rides on every claim and answer, and
Django spent about four times longer building and compiling its query (``Exists`` conditions
inside scalar subqueries: ``resolve_expression``, ``Query.clone``) than the database spent
running it (docs/BENCHMARKS.md, "Where the Python time goes"). A :class:`PreparedQuery` keeps the
ORM as the one definition of the query: it is built once with a :class:`Slot` wherever a value
changes from call to call, compiled once per database connection's vendor, and each call only
fills the slots and sends the same SQL text.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import Field, QuerySet
from django.db.models.expressions import Expression

__all__ = ["PreparedQuery", "Slot", "prepared_cursor", "stand_in"]


class Slot(Expression):
    """A named value of a :class:`PreparedQuery`, filled in when the query runs.

    Use it where the query takes a value (``filter(task_id=Slot("task", IntegerField()))``):
    it compiles to one parameter, which :meth:`PreparedQuery.fetch_one` replaces by the value
    given under ``name``, prepared for the database as ``output_field`` prepares its values.
    """

    def __init__(self, name: str, output_field: Field[Any, Any]) -> None:
        super().__init__(output_field=output_field)
        self.name = name

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:  # noqa: ARG002
        return "%s", (self,)

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


def stand_in(**attributes: Any) -> Any:
    """An object standing for a model instance while a query is built: the selectors read
    ``task.pk`` or ``task.created_at``, and here those are :class:`Slot` objects."""
    return SimpleNamespace(**attributes)


class PreparedQuery:
    """A query whose SQL text is compiled once (per database vendor) and reused.

    ``build`` returns the queryset, with :class:`Slot` objects for the values that change; it is
    called once per vendor, so it must not read the database or anything that changes.
    """

    def __init__(self, build: Callable[[], QuerySet[Any]]) -> None:
        self._build = build
        self._compiled: dict[tuple[str, str], tuple[str, tuple[Any, ...], frozenset[str]]] = {}

    def fetch_one(self, **values: Any) -> tuple[Any, ...]:
        """Run the query with ``values`` in its slots and return its first row."""
        alias = "default"
        connection = connections[alias]
        key = (alias, connection.vendor)
        compiled = self._compiled.get(key)
        if compiled is None:
            queryset = self._build()
            sql, params = queryset.query.get_compiler(using=alias).as_sql()
            names = frozenset(p.name for p in params if isinstance(p, Slot))
            compiled = self._compiled[key] = (sql, tuple(params), names)
        sql, params, names = compiled
        if names != values.keys():
            raise TypeError(f"this query's slots are {sorted(names)}, given {sorted(values)}")
        filled = [
            p.output_field.get_db_prep_value(values[p.name], connection, prepared=False)
            if isinstance(p, Slot)
            else p
            for p in params
        ]
        with prepared_cursor(connection) as cursor:
            cursor.execute(sql, filled)
            row = cursor.fetchone()
        if row is None:
            raise LookupError("the prepared query returned no row")
        return tuple(row)


def prepared_cursor(connection: Any) -> Any:
    """A cursor of ``connection`` (Django's wrapper: its execute wrappers see the statement).

    On PostgreSQL with psycopg 3 it binds parameters on the server and prepares each statement
    there, once per connection: the planner's work on the queue's busiest statements (about as
    long as running them) is then done once, not on every request. Parameters must then have
    types PostgreSQL can tell (cast an empty array: ``%(ids)s::bigint[]``). Persistent
    connections (``CONN_MAX_AGE``) keep the prepared statements; a connection pooler in
    transaction mode must support protocol-level prepared statements (PgBouncer 1.21 or later).
    """
    if connection.vendor != "postgresql" or _PreparingCursor is None or connection.queries_logged:
        # Django's query log (DEBUG, tests capturing queries) wants each statement's text with
        # its values, which a statement bound on the server does not give back.
        return connection.cursor()
    connection.ensure_connection()
    if connection.connection.prepare_threshold is None:
        # Django turns psycopg's preparing off by default; this lets a statement that asks be
        # prepared, and no other (Django's own cursors bind on the client and never prepare).
        connection.connection.prepare_threshold = _ONLY_WHEN_ASKED
    return connection.make_cursor(_PreparingCursor(connection.connection))


_ONLY_WHEN_ASKED = 2**31 - 1


def _preparing_cursor_class() -> Any:
    """psycopg 3's server-binding cursor of Django's PostgreSQL backend, made to prepare every
    statement it runs (``None`` without psycopg 3)."""
    try:
        from django.db.backends.postgresql import base
    except (ImportError, ImproperlyConfigured):  # no PostgreSQL driver installed
        return None
    server_binding: Any = getattr(base, "ServerBindingCursor", None)  # psycopg 3 only
    if server_binding is None:
        return None

    class PreparingCursor(server_binding):
        def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
            return super().execute(query, params, **{**options, "prepare": True})

    return PreparingCursor


_PreparingCursor = _preparing_cursor_class()
