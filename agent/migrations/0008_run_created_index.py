from django.db import migrations, models


class Migration(migrations.Migration):
    """/metrics counts the runs of the last minutes and those still going, not every run
    ever made (ops.metrics.Tally): it finds them by when they were made."""

    dependencies = [
        ("agent", "0007_active_run_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="agentrun",
            index=models.Index(fields=["created_at"], name="agent_run_created_idx"),
        ),
    ]
