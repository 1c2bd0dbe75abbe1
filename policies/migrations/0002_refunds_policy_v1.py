"""Publish version 1 of the refund policy (slug "refunds", clauses R-1 to R-6)."""

from django.db import migrations

from policies.seed import REFUNDS_SLUG, publish_refunds_v1


def publish(apps, schema_editor):
    publish_refunds_v1(
        policy_model=apps.get_model("policies", "Policy"),
        version_model=apps.get_model("policies", "PolicyVersion"),
        clause_model=apps.get_model("policies", "Clause"),
    )


def unpublish(apps, schema_editor):
    PolicyVersion = apps.get_model("policies", "PolicyVersion")
    Policy = apps.get_model("policies", "Policy")
    PolicyVersion.objects.filter(policy__slug=REFUNDS_SLUG, version=1).delete()
    Policy.objects.filter(slug=REFUNDS_SLUG, versions__isnull=True).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("policies", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(publish, unpublish),
    ]
