"""Publish the refund rules with role limits keyed by currency, as the next policy version."""

from django.db import migrations

from policies.seed import REFUNDS_SLUG, publish_limits_per_currency, with_limits_per_currency


def publish(apps, schema_editor):
    publish_limits_per_currency(
        version_model=apps.get_model("policies", "PolicyVersion"),
        clause_model=apps.get_model("policies", "Clause"),
    )


def unpublish(apps, schema_editor):
    """Put the single-currency version `publish` retired back in force. Both stay: refund
    requests may name either as the version they were evaluated under."""
    PolicyVersion = apps.get_model("policies", "PolicyVersion")
    published = PolicyVersion.objects.filter(
        policy__slug=REFUNDS_SLUG, status="published"
    ).first()
    if published is None or "currency" in published.rules:
        return
    retired = PolicyVersion.objects.filter(
        policy_id=published.policy_id, version=published.version - 1, status="retired"
    ).first()
    if retired is None or "currency" not in retired.rules:
        return
    if with_limits_per_currency(retired.rules) != published.rules:
        return
    PolicyVersion.objects.filter(pk=published.pk).update(status="retired")
    PolicyVersion.objects.filter(pk=retired.pk).update(status="published")


class Migration(migrations.Migration):

    dependencies = [
        ("policies", "0002_refunds_policy_v1"),
    ]

    operations = [
        migrations.RunPython(publish, unpublish),
    ]
