"""Reads on the recall path, as SQL run through the ORM's `Manager.raw()`.

A recall makes about nine small reads. Building and compiling each as a queryset costs about half
a millisecond, ten times what SQLite takes to run it (the STM read: 0.63 ms as a queryset, 0.06 ms
as SQL, measured on a 10,000-page store). `raw()` skips the query compiler and still turns column
values into what the model's fields hold (UUIDs, aware datetimes, decoded JSON), on SQLite and
PostgreSQL alike. Only reads come here; memory changes through the services.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import connection
from django.db.models import Model


def rows(model: type[Model], fields: Sequence[str], *, equal: Mapping[str, Any],
         among: Mapping[str, Sequence[Any]] | None = None, order_by: Sequence[str] = (),
         limit: int | None = None) -> list[Any]:
    """Instances of `model` with only `fields` loaded, whose fields equal the values of `equal`
    (a field name each, "user" for a foreign key) and are among the values of `among`, ordered by
    field names ("-seq": descending). An empty list in `among` matches nothing."""
    among = among or {}
    if any(not values for values in among.values()):
        return []
    where = " AND ".join([*(f"{_column(model, name)} = %s" for name in equal),
                          *(f"{_column(model, name)} IN ({', '.join(['%s'] * len(values))})"
                            for name, values in among.items())])
    params = [_prepared(model, name, value) for name, value in equal.items()]
    params += [_prepared(model, name, value) for name, values in among.items() for value in values]
    return _select(model, fields, where, params, order_by=order_by, limit=limit)


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
    names = [model._meta.pk.name, *(name for name in fields if name != model._meta.pk.name)]  # raw() needs the key
    sql = (f"SELECT {', '.join(_column(model, name) for name in names)} "
           f"FROM {connection.ops.quote_name(model._meta.db_table)} WHERE {where}")
    if order_by:
        sql += " ORDER BY " + ", ".join(
            f"{_column(model, name.lstrip('-'))}{' DESC' if name.startswith('-') else ''}" for name in order_by)
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return list(model.objects.raw(sql, params))


def _column(model: type[Model], field: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(field).column)


def _prepared(model: type[Model], field: str, value: Any) -> Any:
    """The value as the database driver takes it (a UUID as SQLite's hex text, a choice as its value)."""
    prepared = model._meta.get_field(field).get_db_prep_value(value, connection)
    return prepared.value if isinstance(prepared, enum.Enum) else prepared
