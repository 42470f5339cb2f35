"""Queries compiled once per database connection and run again with other ids.

Building and compiling an ORM query with a few joins and subqueries takes longer than the database takes to answer
it; the pages reviewers open most keep the compiled form. The query is still written with the ORM: `CompiledValues`
builds it once with placeholder ids, keeps the SQL, its parameters and the columns' converters that Django compiled,
and on each run puts the real ids where the placeholders were. Rows come back as `.values()` gives them.
"""

import inspect
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet

# Placeholder ids are negative, which no primary key is, and far from any constant a query holds.
PLACEHOLDER_BASE = -1_987_654_321


class _Compiled:
    def __init__(self, queryset: QuerySet, placeholders: dict[str, int]):
        query = queryset.query
        compiler = query.get_compiler(using=DEFAULT_DB_ALIAS)
        sql, params = compiler.as_sql()
        self.sql = sql
        self.params = list(params)
        self.slots = [
            (position, name)
            for position, value in enumerate(self.params)
            for name, placeholder in placeholders.items()
            if type(value) is int and value == placeholder
        ]
        missing = set(placeholders) - {name for _, name in self.slots}
        if missing:
            raise ValueError(f"the query does not use {sorted(missing)}")
        # The columns' names in their order, as ValuesIterable reads them.
        if query.selected:
            self.names = list(query.selected)
        else:
            self.names = [*query.extra_select, *query.values_select, *query.annotation_select]
        if compiler.col_count != len(self.names):
            raise ValueError("only a .values() queryset can be compiled")
        self.converters = list(
            compiler.get_converters([column for column, *_ in compiler.select[: len(self.names)]]).items()
        )


class CompiledValues:
    """`build(**ids)` returns a `.values()` queryset; `rows(**ids)` runs its compiled SQL with those ids (ints)."""

    def __init__(self, build: Callable[..., QuerySet]):
        self._build = build
        self._placeholders = {
            name: PLACEHOLDER_BASE - number for number, name in enumerate(inspect.signature(build).parameters)
        }
        self._compiled: WeakKeyDictionary[Any, _Compiled] = WeakKeyDictionary()

    def rows(self, **ids: int) -> list[dict[str, Any]]:
        if ids.keys() != self._placeholders.keys():
            raise TypeError(f"expected the ids {sorted(self._placeholders)}")
        # The connection of this thread (one per thread), not the proxy `django.db.connection`.
        connection = connections[DEFAULT_DB_ALIAS]
        compiled = self._compiled.get(connection)
        if compiled is None:
            queryset = self._build(**self._placeholders).using(DEFAULT_DB_ALIAS)
            compiled = self._compiled[connection] = _Compiled(queryset, self._placeholders)
        params = list(compiled.params)
        for position, name in compiled.slots:
            params[position] = int(ids[name])
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if not compiled.converters:
            return [dict(zip(compiled.names, row, strict=True)) for row in rows]
        result = []
        for row in rows:
            values = list(row)
            for position, (converters, expression) in compiled.converters:
                value = values[position]
                for converter in converters:
                    value = converter(value, expression, connection)
                values[position] = value
            result.append(dict(zip(compiled.names, values, strict=True)))
        return result
