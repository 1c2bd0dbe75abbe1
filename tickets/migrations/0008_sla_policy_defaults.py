"""DESIGN §15's default SLA targets, one policy per priority (edited in admin afterwards)."""

from django.db import migrations

# (first response, resolution) in hours; the same as tickets/sla.py DEFAULT_HOURS, written
# out here because a migration must not change when the code does.
DEFAULTS = {"urgent": (1, 8), "high": (4, 24), "normal": (8, 48), "low": (24, 120)}


def seed(apps, schema_editor):
    policy = apps.get_model("tickets", "SlaPolicy")
    for priority, (first_response, resolution) in DEFAULTS.items():
        policy.objects.get_or_create(
            priority=priority,
            defaults={"first_response_hours": first_response, "resolution_hours": resolution},
        )


class Migration(migrations.Migration):
    dependencies = [("tickets", "0007_sla")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
