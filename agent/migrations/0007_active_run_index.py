from django.db import migrations, models


class Migration(migrations.Migration):
    """The stalled-run sweep reads only active runs: a partial index holds just those, where
    the index it replaces held (status, lease expiry) of every run ever made."""

    dependencies = [
        ("agent", "0006_run_last_event_seq"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="agentrun",
            name="agent_run_lease_idx",
        ),
        migrations.AddIndex(
            model_name="agentrun",
            index=models.Index(
                condition=models.Q(("status__in", ["queued", "running"])),
                fields=["updated_at"],
                name="agent_run_active_idx",
            ),
        ),
    ]
