from django.contrib.auth.management import create_permissions
from django.db import migrations

# Reviewers use Django admin to inspect everything behind a refund; they change nothing there
# except through the approve / reject actions, which call the review services.
REVIEWER_VIEW = {
    "orders": ["customer", "order", "orderline"],
    "tickets": ["ticket", "ticketmessage"],
    "agent": ["agentrun", "agentmessage", "runevent", "toolcalllog"],
    "refunds": ["refundrequest", "refundconfirmation", "refundevent"],
    "policies": ["policy", "policyversion", "clause"],
}


def grant(apps, schema_editor):
    # Permissions are normally created after all migrations ran; create them now.
    for app_config in apps.get_app_configs():
        models_module = getattr(app_config, "models_module", None)
        app_config.models_module = models_module or True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = models_module
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    reviewers = Group.objects.get(name="refund_reviewer")
    for app_label, models in REVIEWER_VIEW.items():
        codenames = [f"view_{model}" for model in models]
        reviewers.permissions.add(*Permission.objects.filter(
            content_type__app_label=app_label, codename__in=codenames))


def revoke(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get(name="refund_reviewer").permissions.clear()


class Migration(migrations.Migration):
    dependencies = [
        ("tickets", "0002_roles"),
        ("orders", "0001_initial"),
        ("agent", "0001_initial"),
        ("refunds", "0001_initial"),
        ("policies", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(grant, revoke)]
