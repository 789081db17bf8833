"""Queries built and compiled once per process, then run with new values.

For the hottest reads only: the statements of every API request (the token and its user), of
every claim and answer (the annotator's membership lock, lease, pause, conflicts, the progress
block) and every task lookup by slug. Django spends longer building and compiling such a query
(``resolve_expression``, ``Query.clone``, the compiler: about 0.5 ms a statement on this
machine) than the database spends running it (docs/BENCHMARKS.md, "Where the Python time
goes"). A :class:`PreparedQuery` keeps the ORM as the one definition of the query: it is built
once with a :class:`Slot` wherever a value changes from call to call, compiled once per
database connection's vendor, and each call only fills the slots, sends the same SQL text and
turns the rows into what the queryset would give."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Field, Model, QuerySet
from django.db.models.expressions import Expression
from django.db.models.query import get_related_populators
from django.db.transaction import TransactionManagementError

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
    called once per vendor, so it must not read the database or anything that changes. Its
    rows come back as the queryset would give them: :meth:`rows` for a ``values_list``
    queryset (the fields' conversions applied), :meth:`instances` for a model queryset (with
    its ``select_related`` objects and annotations), :meth:`fetch_one` for a single row that
    must exist.
    """

    def __init__(self, build: Callable[[], QuerySet[Any]]) -> None:
        self._build = build
        self._compiled: dict[tuple[str, str], _Compiled] = {}

    def fetch_one(self, **values: Any) -> tuple[Any, ...]:
        """Run the query with ``values`` in its slots and return its first row."""
        rows = self.rows(**values)
        if not rows:
            raise LookupError("the prepared query returned no row")
        return rows[0]

    def rows(self, **values: Any) -> list[tuple[Any, ...]]:
        """Run the query with ``values`` in its slots; its rows, converted as Django would."""
        compiled, connection = self._run_args(values)
        return [tuple(row) for row in compiled.convert(self._execute(compiled, connection, values))]

    def instances(self, **values: Any) -> list[Model]:
        """Run a model queryset's query with ``values`` in its slots; its model instances."""
        compiled, connection = self._run_args(values)
        rows = compiled.convert(self._execute(compiled, connection, values))
        return [compiled.instance(row) for row in rows]

    def _run_args(self, values: dict[str, Any]) -> tuple[_Compiled, Any]:
        connection = connections[DEFAULT_DB_ALIAS]
        key = (DEFAULT_DB_ALIAS, connection.vendor)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = _Compiled(self._build(), DEFAULT_DB_ALIAS)
        if compiled.locks and connection.get_autocommit():
            # As Django refuses it: a row lock outside a transaction would be let go at once.
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        if compiled.names != values.keys():
            raise TypeError(
                f"this query's slots are {sorted(compiled.names)}, given {sorted(values)}"
            )
        return compiled, connection

    @staticmethod
    def _execute(compiled: _Compiled, connection: Any, values: dict[str, Any]) -> list[Any]:
        filled = [
            p.output_field.get_db_prep_value(values[p.name], connection, prepared=False)
            if isinstance(p, Slot)
            else p
            for p in compiled.params
        ]
        with prepared_cursor(connection) as cursor:
            cursor.execute(compiled.sql, filled)
            return list(cursor.fetchall())


class _Compiled:
    """One queryset compiled: its SQL text and parameters, and what turns its rows into what
    the queryset gives (the steps of Django's ``results_iter`` and ``ModelIterable``, kept from
    the one compilation instead of redone on every call)."""

    def __init__(self, queryset: QuerySet[Any], alias: str) -> None:
        self.compiler = queryset.query.get_compiler(using=alias)
        sql, params = self.compiler.as_sql()
        self.sql, self.params = sql, tuple(params)
        self.names = frozenset(p.name for p in params if isinstance(p, Slot))
        columns = [s[0] for s in self.compiler.select[: self.compiler.col_count]]
        self.converters = self.compiler.get_converters(columns)
        self.alias = alias
        self.locks = bool(queryset.query.select_for_update) and (
            self.compiler.connection.features.has_select_for_update
        )
        klass_info = self.compiler.klass_info
        if klass_info is not None:
            select, fields = self.compiler.select, klass_info["select_fields"]
            self.model = klass_info["model"]
            self.fields = slice(fields[0], fields[-1] + 1)
            self.attnames = [column[0].target.attname for column in select[self.fields]]
            self.related = get_related_populators(klass_info, select, alias)  # type: ignore[call-arg]
            self.annotations = dict(self.compiler.annotation_col_map or {})

    def convert(self, rows: list[Any]) -> Any:
        return self.compiler.apply_converters(rows, self.converters) if self.converters else rows

    def instance(self, row: Any) -> Model:
        obj = self.model.from_db(self.alias, self.attnames, row[self.fields])
        for populator in self.related:
            populator.populate(row, obj)
        for name, position in self.annotations.items():
            setattr(obj, name, row[position])
        return obj


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
