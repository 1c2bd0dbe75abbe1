from django.db import migrations, models

# The desk list's search (tickets.selectors._tickets_matching) answered from indexes, on
# PostgreSQL: trigram indexes for its substring matches (Django's icontains compares
# UPPER(column) LIKE UPPER('%q%'), so the indexed expression is UPPER(column)), the full-text
# index for the words of messages (the SearchVector the selector builds). Both are PostgreSQL's
# own kinds of index; elsewhere the search scans, as it always did.
SEARCH_INDEXES = [
    # (index name, app label, model, indexed expression)
    ("ticket_reference_trgm_idx", "tickets", "Ticket", "UPPER(reference::text) gin_trgm_ops"),
    ("ticket_subject_trgm_idx", "tickets", "Ticket", "UPPER(subject::text) gin_trgm_ops"),
    ("customer_name_trgm_idx", "orders", "Customer", "UPPER(name::text) gin_trgm_ops"),
    ("customer_email_trgm_idx", "orders", "Customer", "UPPER(email::text) gin_trgm_ops"),
    ("order_order_id_trgm_idx", "orders", "Order", "UPPER(order_id::text) gin_trgm_ops"),
    (
        "ticket_message_body_search_idx",
        "tickets",
        "TicketMessage",
        "to_tsvector('english'::regconfig, COALESCE(body, ''::text))",
    ),
]


def create_search_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    # A trusted extension (PostgreSQL 13+): the database's owner may create it.
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, app_label, model_name, expression in SEARCH_INDEXES:
        table = apps.get_model(app_label, model_name)._meta.db_table
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {schema_editor.quote_name(table)} "
            f"USING gin ({expression})"
        )


def drop_search_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, *_ in SEARCH_INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    """Indexes that keep the desk list, its search and the reply sweep flat in the number of
    tickets."""

    dependencies = [
        ("orders", "0002_customer_email_ignoring_case"),
        ("tickets", "0004_helpdesk"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="ticket",
            index=models.Index(fields=["-updated_at", "-id"], name="ticket_updated_idx"),
        ),
        migrations.AddIndex(
            model_name="ticket",
            index=models.Index(fields=["-created_at", "-id"], name="ticket_created_idx"),
        ),
        migrations.AddIndex(
            model_name="ticket",
            index=models.Index(
                condition=models.Q(("escalated", True)),
                fields=["-updated_at", "-id"],
                name="ticket_escalated_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="ticketmessage",
            index=models.Index(
                condition=models.Q(("delivery", "queued")),
                fields=["created_at", "id"],
                name="ticket_message_queued_idx",
            ),
        ),
        migrations.RunPython(create_search_indexes, drop_search_indexes),
    ]
