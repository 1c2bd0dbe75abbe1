# Over 400 lines: the statement builders share their caches of model metadata (tables,
# columns, converters); what each place saves is measured in bench/db_helpers_ab.py.
"""SQL for the reads and writes that hold an assistant step at parity with its peers, without
the ORM's query compiler.

A step writes its run with its events and messages a few times over, and reads its run with
the ticket's thread once: on PostgreSQL each write is one statement with its commit, which the
ORM makes four round trips and a compile, and the read is one statement the ORM compiles for
longer than the database takes. These helpers build those statements from the models'
metadata, once per shape, with the values prepared by the fields themselves
(`get_db_prep_save`: JSON adapters, time zones, UUIDs) and the rows read back through the
fields' converters, on every backend. Everything else goes through the ORM: what each place
saves was measured against the ORM doing the same (bench/db_helpers_ab.py), and only these
save a millisecond or more of a step.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.fields.related import ForeignKey

M = TypeVar("M", bound=models.Model)


@cache
def _insert_fields(model: type[models.Model]) -> tuple[models.Field, ...]:
    return tuple(
        field
        for field in model._meta.concrete_fields
        if not (field.primary_key and field.db_returning)  # the database numbers it
    )


def _this_thread() -> BaseDatabaseWrapper:
    """This thread's connection itself: every attribute of `connection`, a proxy, is looked up
    in a thread-local first, and preparing a write's values reads a few for each value."""
    return connections[DEFAULT_DB_ALIAS]


def _insert_params(objs: Sequence[models.Model], fields: Sequence[models.Field]) -> list:
    """The values of `objs` for an INSERT of `fields`, row after row, as the fields prepare
    them (with `auto_now_add` times set on the instances, as `bulk_create` does)."""
    here = _this_thread()
    return [
        field.get_db_prep_save(field.pre_save(obj, add=True), here)
        for obj in objs
        for field in fields
    ]


def _saved(objs: Iterable[models.Model]) -> None:
    alias = connection.alias
    for obj in objs:
        obj._state.adding = False
        obj._state.db = alias


@cache
def _column(model: type[models.Model], name: str) -> tuple[models.Field, str]:
    """The field `name` of `model` ("pk", a field's name or attname) and its quoted column."""
    field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    assert isinstance(field, models.Field) and field.column
    return field, connection.ops.quote_name(field.column)


def column(model: type[models.Model], name: str, alias: str = "") -> str:
    """The quoted column of `model`'s field `name`, on table `alias` when one is named, for
    hand-written SQL."""
    quoted = _column(model, name)[1]
    return f"{alias}.{quoted}" if alias else quoted


def table(model: type[models.Model]) -> str:
    """The quoted table of `model`, for hand-written SQL."""
    return connection.ops.quote_name(model._meta.db_table)


def _conditions(
    model: type[models.Model],
    where: Mapping[str, object],
    where_in: Mapping[str, Iterable] | None,
    *,
    alias: str = "",
) -> tuple[list[str], list]:
    """`where` (field = value) and `where_in` (field IN values) as SQL conditions on `model`'s
    table (`alias`, when it is named), with their prepared parameters."""
    prefix = f"{alias}." if alias else ""
    here = _this_thread()
    conditions, params = [], []
    for name, value in where.items():
        field, col = _column(model, name)
        conditions.append(f"{prefix}{col} = %s")
        params.append(field.get_db_prep_value(value, here))
    for name, allowed in (where_in or {}).items():
        field, col = _column(model, name)
        prepared = [field.get_db_prep_value(value, here) for value in allowed]
        # IN of nothing matches no row ("IN ()" is not SQL).
        placeholders = ", ".join(["%s"] * len(prepared))
        conditions.append(f"{prefix}{col} IN ({placeholders})" if prepared else "1 = 0")
        params.extend(prepared)
    return conditions, params


@dataclass(frozen=True)
class Update:
    """An UPDATE of the row of `model` matching `where` (field = value, the primary key among
    them), `where_in` (field IN values) and `any_of`: fields in `values` get those values,
    fields in `add` grow by those amounts; it returns its `returning` field as changed (the
    primary key unless told)."""

    model: type[models.Model]
    where: Mapping[str, object]
    returning: str = "pk"
    where_in: Mapping[str, Iterable] | None = None
    values: Mapping[str, object] | None = None
    add: Mapping[str, int] | None = None
    # One more condition: any of these (field, "=" or "<", value) holds.
    any_of: Sequence[tuple[str, str, object]] = ()

    def sql(self, *, returning: str = "") -> tuple[str, list]:
        """The statement and its parameters; it returns `returning` (SQL: "*" for the whole
        row) instead of the `returning` field when given."""
        here = _this_thread()
        assignments, params = [], []
        for name, value in (self.values or {}).items():
            field, col = _column(self.model, name)
            assignments.append(f"{col} = %s")
            params.append(field.get_db_prep_save(value, here))
        for name, amount in (self.add or {}).items():
            _, col = _column(self.model, name)
            assignments.append(f"{col} = {col} + %s")
            params.append(amount)
        conditions, where_params = _conditions(self.model, self.where, self.where_in)
        params.extend(where_params)
        if self.any_of:
            alternatives = []
            for name, operator, value in self.any_of:
                assert operator in ("=", "<"), operator
                field, col = _column(self.model, name)
                alternatives.append(f"{col} {operator} %s")
                params.append(field.get_db_prep_value(value, here))
            conditions.append(f"({' OR '.join(alternatives)})")
        # Names from the model's metadata, quoted; every value is a parameter.
        sql = (
            f"UPDATE {connection.ops.quote_name(self.model._meta.db_table)}"  # noqa: S608
            f" SET {', '.join(assignments)} WHERE {' AND '.join(conditions)}"
            f" RETURNING {returning or self.returned_column}"
        )
        return sql, params

    @property
    def returned_column(self) -> str:
        return _column(self.model, self.returning)[1]


def update_returning(update: Update):
    """Run `update`: its `returning` field as changed, None when no row matched."""
    sql, params = update.sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return rows[0][0] if rows else None


def update_then_insert(
    update: Update,
    *,
    inserts: Sequence[Sequence[models.Model]] = (),
    relative: Mapping[type[models.Model], str] | None = None,
    also: Sequence[tuple[str, Sequence]] = (),
    durable: bool = True,
):
    """PostgreSQL: `update`, and only if its row matched, the INSERT of every group
    of unsaved instances (of one model each) in `inserts`, as one statement: one round trip,
    its commit included when no transaction is open. `relative` names, per model, a field
    that holds an offset from the returned value, which it becomes (rows numbered from a
    counter the UPDATE moved on). `also`: SQL expressions (with their parameters) to select
    with the returned value, which they may name as `held.<column>` (a `pg_notify` sent only
    if the row matched). Not `durable`: the commit does not wait for the disk.

    Returns the `returning` field as changed, None when no row matched (nothing was written).
    """
    sql, params = update.sql()
    returned = f"held.{update.returned_column}"
    statement = f"WITH held AS ({sql})"
    for index, objs in enumerate(group for group in inserts if group):
        numbered = (relative or {}).get(type(objs[0]), "")
        insert, insert_params = _insert_select(objs, relative=numbered, base=returned)
        statement += f", inserted_{index} AS ({insert})"
        params.extend(insert_params)
    selected = [returned, *(sql for sql, _ in also)]
    if not durable:
        selected.append(NO_WAIT)
    # Names from the models' metadata, quoted, and the caller's expressions; every value is a
    # parameter.
    statement += f" SELECT {', '.join(selected)} FROM held"  # noqa: S608
    params.extend(param for _, expression_params in also for param in expression_params)
    # One statement: its own transaction when none is open (rolled back whole if any part of
    # it fails), and prepared once a connection has sent it a few times.
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        rows = cursor.fetchall()
    for group in inserts:
        _saved(group)
    return rows[0][0] if rows else None


# Selected with the row the UPDATE matched: the transaction the statement runs in (its own, or
# the caller's) commits without waiting for the disk, as after SET LOCAL synchronous_commit TO
# OFF. It survives the process dying, not the database server crashing.
NO_WAIT = "set_config('synchronous_commit', 'off', true)"


def _insert_select(objs: Sequence[models.Model], *, relative: str, base: str) -> tuple[str, list]:
    """INSERT `objs` from a VALUES list selected with `held`, so nothing is inserted when the
    UPDATE matched no row. Each value is cast to its column's type: a VALUES list, unlike an
    INSERT's own, does not take its types from the table."""
    model = type(objs[0])
    fields = _insert_fields(model)
    before, row, after = _insert_select_sql(model, relative, base)
    return before + ", ".join([row] * len(objs)) + after, _insert_params(objs, fields)


@cache
def _insert_select_sql(model: type[models.Model], relative: str, base: str) -> tuple[str, str, str]:
    """`_insert_select`'s statement before its VALUES rows, one such row, and what follows."""
    fields = _insert_fields(model)
    row = "(" + ", ".join(f"CAST(%s AS {field.db_type(connection)})" for field in fields) + ")"
    names = [f"c{index}" for index in range(len(fields))]
    selected = [
        f"{base} + v.{name}" if field.attname == relative else f"v.{name}"
        for field, name in zip(fields, names, strict=True)
    ]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column or "") for field in fields)
    # Names from the model's metadata, quoted; every value is a parameter.
    before = f"INSERT INTO {quote(model._meta.db_table)} ({columns})"
    before += f" SELECT {', '.join(selected)} FROM held, (VALUES "  # noqa: S608
    return before, row, f") AS v ({', '.join(names)})"


# --- Reads ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Table:
    """One model in a `select`: the base model (`link` None) or one joined through `link`, a
    foreign key of the table at `parent`."""

    model: type[models.Model]
    alias: str
    parent: int | None = None
    link: ForeignKey | None = None
    optional: bool = False  # LEFT OUTER JOIN: the key is nullable, here or above

    @property
    def fields(self) -> list[models.Field]:
        return list(self.model._meta.concrete_fields)  # in the order `from_db` takes them


@cache
def _tables(model: type[models.Model], related: tuple[str, ...]) -> tuple[_Table, ...]:
    """The base model and the models its `related` paths ("ticket__order") reach, as
    `select_related` would join them."""
    tables = [_Table(model, "t0")]
    positions: dict[str, int] = {"": 0}
    for path in related:
        prefix = ""
        for name in path.split("__"):
            at = positions[prefix]
            prefix = f"{prefix}__{name}" if prefix else name
            if prefix in positions:
                continue
            parent = tables[at]
            link = parent.model._meta.get_field(name)
            assert isinstance(link, ForeignKey), f"{prefix} is not a foreign key"
            positions[prefix] = len(tables)
            tables.append(
                _Table(
                    link.related_model,  # type: ignore[arg-type]
                    f"t{len(tables)}",
                    parent=at,
                    link=link,
                    optional=parent.optional or link.null,
                )
            )
    return tuple(tables)


@cache
def _select_sql(
    model: type[models.Model],
    related: tuple[str, ...],
    where: tuple[str, ...],
    where_in: tuple[tuple[str, int], ...],
    annotations: tuple[str, ...],
) -> str:
    sql = _joined_sql(_tables(model, related), annotations, model._meta.db_table)
    conditions, _ = _conditions(
        model,
        dict.fromkeys(where),
        {name: [None] * count for name, count in where_in},
        alias="t0",
    )
    return f"{sql} WHERE {' AND '.join(conditions)}"


@cache
def _joined_sql(tables: tuple[_Table, ...], annotations: tuple[str, ...], source: str) -> str:
    """SELECT the tables' columns and `annotations` FROM `source` (a table or a CTE) as t0,
    with the joined tables."""
    quote = connection.ops.quote_name
    columns = [
        f"{table.alias}.{quote(field.column or '')}" for table in tables for field in table.fields
    ]
    joins = []
    for table in tables[1:]:
        assert table.link is not None and table.parent is not None
        parent = tables[table.parent]
        kind = "LEFT OUTER JOIN" if table.optional else "INNER JOIN"
        target = table.link.target_field.column
        assert table.link.column and target
        joins.append(
            f" {kind} {quote(table.model._meta.db_table)} {table.alias} ON "
            f"{parent.alias}.{quote(table.link.column)} = {table.alias}.{quote(target)}"
        )
    # Names from the models' metadata, quoted; the caller's expressions; no values.
    return (
        f"SELECT {', '.join([*columns, *annotations])} FROM {quote(source)} t0"  # noqa: S608
        + "".join(joins)
    )


@dataclass(frozen=True)
class _Reader:
    """How a row's slice becomes an instance of a table's model: the fields' attnames, the
    primary key's position, and per field its column with what the ORM applies to the
    database's value (JSON, decimals, booleans and datetimes on SQLite...)."""

    attnames: tuple[str, ...]
    pk_index: int | None
    converters: tuple[tuple[object, tuple], ...]


@cache
def _reader(table: _Table) -> _Reader:
    fields = table.fields
    converters = []
    for field in fields:
        col = field.get_col(table.alias)
        found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        converters.append((col, tuple(found)))
    return _Reader(
        attnames=tuple(field.attname for field in fields),
        pk_index=fields.index(table.model._meta.pk),
        converters=tuple(converters),
    )


def select(
    model: type[models.Model],
    *,
    where: Mapping[str, object],
    where_in: Mapping[str, Sequence] | None = None,
    related: Sequence[str] = (),
    annotate: Mapping[str, str] | None = None,
) -> list:
    """Instances of `model` matching `where` and `where_in` (as in `update_returning`), with
    the foreign keys along `related` paths joined and cached on them, like `select_related`
    (None where a nullable key is empty).
    `annotate`: SQL expressions without parameters, on the base table as `t0`, whose values
    are set on each instance under their names, as the ORM's `annotate` does."""
    related, annotate = tuple(related), annotate or {}
    annotations = tuple(annotate.values())
    rows = _rows(model, related, where, where_in or {}, annotations)
    return _annotated(_tables(model, related), rows, tuple(annotate))


def update_select(
    update: Update, *, related: Sequence[str] = (), annotate: Mapping[str, str] | None = None
) -> list:
    """Run `update` and read the row it changed as `select` reads it: on PostgreSQL in one
    statement (the UPDATE's row joined with `related`), elsewhere the UPDATE, then the read."""
    related, annotate = tuple(related), annotate or {}
    if connection.vendor != "postgresql":
        pk = update_returning(replace(update, returning="pk"))
        if pk is None:
            return []
        return select(update.model, where={"pk": pk}, related=related, annotate=annotate)
    sql, params = update.sql(returning="*")
    tables = _tables(update.model, related)
    statement = (
        f"WITH changed AS ({sql}) {_joined_sql(tables, tuple(annotate.values()), 'changed')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        rows = cursor.fetchall()
    return _annotated(tables, rows, tuple(annotate))


def _annotated(tables: tuple[_Table, ...], rows: list[tuple], names: tuple[str, ...]) -> list:
    """The base instance of each row, with the row's last values set under `names`."""
    instances = []
    for row in rows:
        instance = _instances(tables, row)[0]
        for name, value in zip(names, row[len(row) - len(names) :], strict=True):
            setattr(instance, name, value)
        instances.append(instance)
    return instances


def row_columns(model: type[models.Model], alias: str) -> list[str]:
    """The quoted columns of `model`'s fields on table `alias`, for hand-written SQL, in the
    order `instance_from_row` takes their values."""
    quote = connection.ops.quote_name
    return [f"{alias}.{quote(field.column or '')}" for field in _Table(model, alias).fields]


def instance_from_row(model: type[M], values: Sequence) -> M:
    """An instance of `model` from a row's values of `row_columns`, converted as `select`
    converts them."""
    reader = _reader(_Table(model, "t0"))
    return model.from_db(connection.alias, reader.attnames, _converted(reader, values))


def _rows(model, related, where, where_in, annotations) -> list[tuple]:
    shape = tuple((name, len(values)) for name, values in where_in.items())
    sql = _select_sql(model, related, tuple(where), shape, annotations)
    _, params = _conditions(model, where, where_in)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _converted(reader: _Reader, values: Sequence) -> list:
    here = _this_thread()
    converted = list(values)
    for index, (col, converters) in enumerate(reader.converters):
        for converter in converters:
            converted[index] = converter(converted[index], col, here)
    return converted


def _instances(tables: tuple[_Table, ...], row: Sequence) -> list[models.Model | None]:
    """The row's instance of each table, the joined ones cached on those they hang from."""
    instances: list[models.Model | None] = []
    start = 0
    for table in tables:
        reader = _reader(table)
        values = _converted(reader, row[start : start + len(reader.attnames)])
        start += len(reader.attnames)
        assert reader.pk_index is not None  # every field is read for an instance
        instance = None
        # A LEFT OUTER JOIN that found nothing: the key is empty.
        if table.parent is None or values[reader.pk_index] is not None:
            instance = table.model.from_db(connection.alias, reader.attnames, values)
        instances.append(instance)
        if table.link is not None and table.parent is not None:
            parent = instances[table.parent]
            if parent is not None:
                table.link.set_cached_value(parent, instance)
    return instances
