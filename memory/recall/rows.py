"""Reads on the recall path, as SQL on a cursor, turned into model instances as the ORM would.

A recall makes about nine small reads. Building and compiling each as a queryset costs about half
a millisecond, ten times what SQLite takes to run it (the STM read: 0.63 ms as a queryset, 0.06 ms
as SQL, measured on a 10,000-page store). `Manager.raw()` skips the compiler but still works out,
on every read, the columns, their order and the per-row annotations. Here the columns, their
order and each field's converters are worked out once per model and field list (BENCHMARKS.md's
A/B measures this together with the embedding overlap); each row's values still go through the
same converters the ORM applies (UUIDs, aware datetimes, decoded JSON) on SQLite and PostgreSQL
alike, and rows become instances through `Model.from_db`, with the fields not read deferred.
Only reads come here; memory changes through the services.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Field, Model


def rows(model: type[Model], fields: Sequence[str], *, equal: Mapping[str, Any],
         among: Mapping[str, Sequence[Any]] | None = None, order_by: Sequence[str] = (),
         limit: int | None = None) -> list[Any]:
    """Instances of `model` with only `fields` loaded, whose fields equal the values of `equal`
    (a field name each, "user" for a foreign key) and are among the values of `among`, ordered by
    field names ("-seq": descending). An empty list in `among` matches nothing."""
    found = _where(model, equal, among)
    if found is None:
        return []
    return _select(model, fields, *found, order_by=order_by, limit=limit)


def _where(model: type[Model], equal: Mapping[str, Any], among: Mapping[str, Sequence[Any]] | None, *,
           alias: str = "") -> tuple[str, list[Any]] | None:
    """The WHERE clause and its parameters for `rows` (the columns qualified by `alias` when
    given); None when it can match nothing."""
    among = among or {}
    if any(not values for values in among.values()):
        return None
    where = " AND ".join([*(f"{_column(model, name, alias)} = %s" for name in equal),
                          *(f"{_column(model, name, alias)} IN ({', '.join(['%s'] * len(values))})"
                            for name, values in among.items())])
    params = [_prepared(model, name, value) for name, value in equal.items()]
    params += [_prepared(model, name, value) for name, values in among.items() for value in values]
    return where, params


def values(model: type[Model], fields: Sequence[str], *, equal: Mapping[str, Any],
           among: Mapping[str, Sequence[Any]] | None = None, order_by: Sequence[str] = ()) -> list[tuple[Any, ...]]:
    """Like `rows`, but each row a tuple of `fields`' values in the order asked (converted as the
    ORM converts them; a foreign key's raw id), with no model instance built: for reads of many
    small rows (a user's traits) whose instances would cost more than the query."""
    found = _where(model, equal, among)
    if found is None:
        return []
    plan = _plan(model, tuple(fields), connection.vendor)
    at = [plan.attnames.index(model._meta.get_field(name).attname) for name in fields]
    return [tuple(row[i] for i in at)
            for row in _converted(_fetch(model, plan, *found, order_by=order_by, limit=None), plan)]


def row_and_values(model: type[Model], fields: Sequence[str], *, pk: Any, many: type[Model],
                   many_fields: Sequence[str], equal: Mapping[str, Any], order_by: Sequence[str] = ()
                   ) -> tuple[Any, list[tuple[Any, ...]]]:
    """The row of `model` whose primary key is `pk` (`fields` loaded; None when there is none) and,
    as `values` gives them, the rows of `many` that match `equal`, in one statement: two reads of
    one user's (the profile and the traits) for the price of one.

    A one-row driver LEFT JOINs both, so that each side may be missing: the row's columns repeat on
    each of the many rows, and are converted once.
    """
    one_plan, many_plan = _plan(model, tuple(fields), connection.vendor), _plan(many, tuple(many_fields),
                                                                                 connection.vendor)
    matching, params = _where(many, equal, None, alias="many") or ("", [])  # with no `among`, never None
    quote = connection.ops.quote_name
    sql = (f"SELECT {_qualified(one_plan, 'one')}, {_qualified(many_plan, 'many')} FROM (SELECT 1 AS present) driver"
           f" LEFT JOIN {quote(model._meta.db_table)} one ON {_column(model, model._meta.pk.name, 'one')} = %s"
           f" LEFT JOIN {quote(many._meta.db_table)} many ON {matching}")
    if order_by:
        sql += " ORDER BY " + _order(many, order_by, "many")
    with connection.cursor() as cursor:
        cursor.execute(sql, [_prepared(model, model._meta.pk.name, pk), *params])
        found = cursor.fetchall()
    width, many_pk = len(one_plan.attnames), many_plan.attnames.index(many._meta.pk.attname)
    row = None
    if found and found[0][one_plan.attnames.index(model._meta.pk.attname)] is not None:
        row = model.from_db(connection.alias, one_plan.attnames, _converted([found[0][:width]], one_plan)[0])
    present = [values[width:] for values in found if values[width + many_pk] is not None]
    at = [many_plan.attnames.index(many._meta.get_field(name).attname) for name in many_fields]
    return row, [tuple(values[i] for i in at) for values in _converted(present, many_plan)]


def by_pk(model: type[Model], ids: Iterable[Any], fields: Sequence[str]) -> dict[str, Any]:
    """Instances of `model` by primary key (the key's string form), `fields` loaded.

    An id that is not a valid key raises ValidationError, as a queryset's `pk__in` would.
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    pk = model._meta.pk
    where = f"{_column(model, pk.name)} IN ({', '.join(['%s'] * len(wanted))})"
    params = [_prepared(model, pk.name, pk.to_python(value)) for value in wanted]
    return {str(row.pk): row for row in _select(model, fields, where, params)}


def _select(model: type[Model], fields: Sequence[str], where: str, params: list[Any], *,
            order_by: Sequence[str] = (), limit: int | None = None) -> list[Any]:
    plan = _plan(model, tuple(fields), connection.vendor)
    found = _fetch(model, plan, where, params, order_by=order_by, limit=limit)
    db, names = connection.alias, plan.attnames
    return [model.from_db(db, names, values) for values in _converted(found, plan)]


def _fetch(model: type[Model], plan: _Plan, where: str, params: list[Any], *, order_by: Sequence[str],
           limit: int | None) -> list[tuple[Any, ...]]:
    sql = f"SELECT {plan.columns} FROM {connection.ops.quote_name(model._meta.db_table)} WHERE {where}"
    if order_by:
        sql += " ORDER BY " + _order(model, order_by)
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _order(model: type[Model], order_by: Sequence[str], alias: str = "") -> str:
    return ", ".join(f"{_column(model, name.lstrip('-'), alias)}{' DESC' if name.startswith('-') else ''}"
                     for name in order_by)


def _converted(found: list[tuple[Any, ...]], plan: _Plan) -> list[list[Any]]:
    """Each row's values as the ORM gives them (the converters of the plan's columns applied)."""
    converted = plan.converters
    result = []
    for row in found:
        values = list(row)
        for position, field, converters in converted:
            value = values[position]
            for convert in converters:
                value = convert(value, field, connection)
            values[position] = value
        result.append(values)
    return result


class _Plan(NamedTuple):
    """How to read `fields` of a model: the SELECT list in the model's field order (the order
    `from_db` takes values in), and the converters of the columns that have any."""

    columns: str
    quoted: list[str]  # the same columns one by one, for a SELECT that qualifies them
    attnames: list[str]
    converters: list[tuple[int, Field, tuple[Callable[..., Any], ...]]]


@functools.lru_cache(maxsize=256)
def _plan(model: type[Model], fields: tuple[str, ...], vendor: str) -> _Plan:
    wanted = {model._meta.get_field(name) for name in fields} | {model._meta.pk}  # from_db needs the key
    ordered = [field for field in model._meta.concrete_fields if field in wanted]
    converters = []
    for position, field in enumerate(ordered):
        found = (connection.ops.get_db_converters(field.get_col(model._meta.db_table))
                 + field.get_db_converters(connection))
        if found:
            converters.append((position, field, tuple(found)))
    quoted = [connection.ops.quote_name(field.column) for field in ordered]
    return _Plan(", ".join(quoted), quoted, [field.attname for field in ordered], converters)


def _qualified(plan: _Plan, alias: str) -> str:
    """The plan's SELECT list with each column qualified by the table's alias."""
    return ", ".join(f"{alias}.{column}" for column in plan.quoted)


def _column(model: type[Model], field: str, alias: str = "") -> str:
    column = connection.ops.quote_name(model._meta.get_field(field).column)
    return f"{alias}.{column}" if alias else column


def _prepared(model: type[Model], field: str, value: Any) -> Any:
    """The value as the database driver takes it (a UUID as SQLite's hex text, a choice as its value)."""
    prepared = model._meta.get_field(field).get_db_prep_value(value, connection)
    return prepared.value if isinstance(prepared, enum.Enum) else prepared
