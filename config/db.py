"""SQL for the few writes on a hot path, without the ORM's query compiler.

An assistant step writes a handful of rows a few times over: compiling each statement
(`bulk_create`, `update` with expressions) costs the step more than the database does. These
helpers build the same statements from the models' metadata, with the values prepared by the
fields themselves (`get_db_prep_save`: JSON adapters, time zones, UUIDs), on every backend.
"""

from collections.abc import Iterable, Mapping, Sequence
from functools import cache

from django.db import connection, models

# Between the statements of a batch sent in one call.
STATEMENT_SEPARATOR = ";\n"


class Batch:
    """Statements sent together: in one round trip on PostgreSQL, whose client-side binding
    cursors (Django's default) take several statements at once; one by one elsewhere. For
    writes whose results are not read, inside the caller's transaction."""

    def __init__(self):
        self.statements: list[tuple[str, list]] = []

    def add(self, sql: str, params: Sequence = ()) -> None:
        self.statements.append((sql, list(params)))

    def insert(self, objs: Sequence[models.Model]) -> None:
        """INSERT unsaved instances of one model in one statement, as `bulk_create` does
        with their defaults and `auto_now_add` times (their primary keys are not read back).
        """
        if not objs:
            return
        model = type(objs[0])
        fields = _insert_fields(model)
        row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        self.add(
            _insert_sql(model) + ", ".join([row] * len(objs)),
            [
                field.get_db_prep_save(field.pre_save(obj, add=True), connection)
                for obj in objs
                for field in fields
            ],
        )
        for obj in objs:
            obj._state.adding = False
            obj._state.db = connection.alias

    def run(self) -> None:
        if not self.statements:
            return
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    STATEMENT_SEPARATOR.join(sql for sql, _ in self.statements),
                    [param for _, params in self.statements for param in params],
                )
            else:
                for sql, params in self.statements:
                    cursor.execute(sql, params)
        self.statements.clear()


@cache
def _insert_fields(model: type[models.Model]) -> tuple[models.Field, ...]:
    return tuple(
        field
        for field in model._meta.concrete_fields
        if not (field.primary_key and field.db_returning)  # the database numbers it
    )


@cache
def _insert_sql(model: type[models.Model]) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column or "") for field in _insert_fields(model))
    # Names from the model's metadata, quoted; every value is a parameter.
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES "  # noqa: S608


def update_returning(
    model: type[models.Model],
    *,
    where: Mapping[str, object],
    where_in: Mapping[str, Iterable] | None = None,
    values: Mapping[str, object] | None = None,
    add: Mapping[str, int] | None = None,
    returning: str,
):
    """UPDATE the row of `model` matching `where` (field = value, the primary key among them)
    and `where_in` (field IN values): fields in `values` get those values, fields in `add` grow
    by those amounts. Returns its `returning` field as changed, None when no row matched."""
    meta = model._meta
    quote = connection.ops.quote_name

    def column(name: str) -> tuple[models.Field, str]:
        field = meta.pk if name == "pk" else meta.get_field(name)
        assert isinstance(field, models.Field) and field.column
        return field, quote(field.column)

    assignments, params = [], []
    for name, value in (values or {}).items():
        field, col = column(name)
        assignments.append(f"{col} = %s")
        params.append(field.get_db_prep_save(value, connection))
    for name, amount in (add or {}).items():
        _, col = column(name)
        assignments.append(f"{col} = {col} + %s")
        params.append(amount)
    conditions = []
    for name, value in where.items():
        field, col = column(name)
        conditions.append(f"{col} = %s")
        params.append(field.get_db_prep_value(value, connection))
    for name, allowed in (where_in or {}).items():
        field, col = column(name)
        prepared = [field.get_db_prep_value(value, connection) for value in allowed]
        conditions.append(f"{col} IN ({', '.join(['%s'] * len(prepared))})")
        params.extend(prepared)
    # Names from the model's metadata, quoted; every value is a parameter.
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {', '.join(assignments)}"  # noqa: S608
        f" WHERE {' AND '.join(conditions)} RETURNING {column(returning)[1]}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return rows[0][0] if rows else None
