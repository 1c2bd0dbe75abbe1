from django.db import migrations, models


class Migration(migrations.Migration):
    """Indexes that keep the reviewer queue, the refund API and the reconcile sweep flat in the
    number of requests: the sweep reads a partial index of its work queue only."""

    dependencies = [
        ("refunds", "0003_one_open_intent_provider_pending"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="refundrequest",
            name="refund_status_idx",
        ),
        migrations.AddIndex(
            model_name="refundrequest",
            index=models.Index(
                fields=["status", "created_at", "id"], name="refund_status_created_idx"
            ),
        ),
        migrations.AddIndex(
            model_name="refundrequest",
            index=models.Index(fields=["created_at", "id"], name="refund_created_idx"),
        ),
        migrations.AddIndex(
            model_name="refundrequest",
            index=models.Index(
                condition=models.Q(
                    ("status__in", ["approved", "executing", "provider_pending", "outcome_unknown"])
                ),
                fields=["status", "updated_at"],
                name="refund_in_flight_idx",
            ),
        ),
    ]
