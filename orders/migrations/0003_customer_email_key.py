from django.db import migrations, models

from orders.addresses import BadAddress, email_key


def fill_email_keys(apps, schema_editor):
    """Every customer's key, oldest customer first. Two customers whose addresses are one key
    now (a domain written in Unicode and in punycode) were two before: the older keeps the key
    and receives the mail, as the inbound lookup chose the oldest before; the younger keeps its
    tickets and orders with no key, so no mail reaches it. An address whose domain cannot be
    encoded gets no key either: mail from it is refused from now on."""
    Customer = apps.get_model("orders", "Customer")
    taken = set()
    keyed = []
    for customer in Customer.objects.order_by("pk").only("pk", "email").iterator():
        try:
            key = email_key(customer.email)
        except BadAddress:
            continue
        if key not in taken:
            taken.add(key)
            customer.email_key = key
            keyed.append(customer)
    Customer.objects.bulk_update(keyed, ["email_key"], batch_size=1000)


class Migration(migrations.Migration):

    dependencies = [
        ("orders", "0002_customer_email_ignoring_case"),
    ]

    operations = [
        # PostgreSQL's lower() folds the Kelvin sign into k: "\u212aate@x" could never be a
        # customer beside kate@x (an IntegrityError on inbound mail). The key replaces it.
        migrations.RemoveConstraint(
            model_name="customer",
            name="customer_email_unique_ignoring_case",
        ),
        migrations.AddField(
            model_name="customer",
            name="email_key",
            field=models.CharField(editable=False, max_length=512, null=True, unique=True),
        ),
        migrations.RunPython(fill_email_keys, migrations.RunPython.noop),
    ]
