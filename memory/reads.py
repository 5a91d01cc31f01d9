"""Reads on the recall path, as SQL run through the ORM's `Manager.raw()`.

A recall makes about nine small reads. Building and compiling each as a queryset costs about half
a millisecond, ten times what SQLite takes to run it (the STM read: 0.63 ms as a queryset, 0.06 ms
as SQL, measured on a 10,000-page store). `raw()` skips the query compiler and still turns column
values into what the model's fields hold (UUIDs, aware datetimes, decoded JSON), on SQLite and
PostgreSQL alike. Only reads come here; memory changes through the services.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Model


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def columns(model: type[Model], fields: Sequence[str]) -> str:
    """The quoted columns of the named fields ("user" gives user_id), the primary key first
    (raw() needs it)."""
    meta = model._meta
    names = [meta.pk.name, *(name for name in fields if name != meta.pk.name)]
    return ", ".join(connection.ops.quote_name(meta.get_field(name).column) for name in names)


def column(model: type[Model], field: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(field).column)


def rows(model: type[Model], fields: Sequence[str], where: str, params: Sequence[Any], *,
         order_by: str = "", limit: int | None = None) -> list[Any]:
    """Instances of `model` with only `fields` loaded, for a WHERE clause over quoted columns."""
    sql = f"SELECT {columns(model, fields)} FROM {table(model)} WHERE {where}"
    if order_by:
        sql += f" ORDER BY {order_by}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return list(model.objects.raw(sql, list(params)))


def by_pk(model: type[Model], ids: Iterable[Any], fields: Sequence[str]) -> dict[str, Any]:
    """Instances of `model` by primary key (the key's string form), `fields` loaded.

    An id that is not a valid key raises ValidationError, as a queryset's `pk__in` would.
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    pk = model._meta.pk
    params = [pk.get_db_prep_value(pk.to_python(value), connection) for value in wanted]
    where = f"{column(model, pk.name)} IN ({', '.join(['%s'] * len(params))})"
    return {str(row.pk): row for row in rows(model, fields, where, params)}
