from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from orders.addresses import BadAddress, email_key


class Customer(models.Model):
    name = models.CharField(max_length=200)
    # As the customer wrote it: replies go here.
    email = models.EmailField(unique=True)
    # What mail is matched on (orders/addresses.py), set from `email` on every save: unique, so
    # Bob@x and bob@x are one customer even when their first two emails arrive at once, and
    # nothing looser joins two addresses. Null for a customer no mail reaches (null, not "":
    # there may be several): the younger of two customers whose addresses became one key when
    # keys were introduced, or one whose domain cannot be encoded.
    email_key = models.CharField(  # noqa: DJ001
        max_length=512, unique=True, null=True, editable=False
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        self.email_key = email_key(self.email)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "email" in update_fields:
            kwargs["update_fields"] = {*update_fields, "email_key"}
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        try:
            key = email_key(self.email)
        except BadAddress as exc:
            raise ValidationError({"email": exc.message}) from None
        if Customer.objects.filter(email_key=key).exclude(pk=self.pk).exists():
            raise ValidationError({"email": "Another customer has this address."})


class Order(models.Model):
    class Status(models.TextChoices):
        PAID = "paid", "Paid"
        SHIPPED = "shipped", "Shipped"
        DELIVERED = "delivered", "Delivered"
        CANCELLED = "cancelled", "Cancelled"

    order_id = models.CharField(max_length=20, unique=True)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="orders")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PAID)
    currency = models.CharField(max_length=3, default="CNY")
    amount_paid = models.DecimalField(max_digits=12, decimal_places=2)
    placed_at = models.DateTimeField()
    shipped_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    payment_reference = models.CharField(max_length=64, blank=True)
    # Written by the customer at checkout: untrusted text, never instructions.
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["-placed_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(order_id__regex=r"^[0-9]{8,20}$"), name="order_id_8_to_20_digits"
            ),
            models.CheckConstraint(condition=Q(amount_paid__gte=0), name="order_amount_paid_gte_0"),
        ]

    def __str__(self) -> str:
        return self.order_id


class OrderLine(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="lines")
    sku = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    category = models.CharField(max_length=64)
    quantity = models.PositiveIntegerField(default=1)
    unit_price = models.DecimalField(max_digits=12, decimal_places=2)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(quantity__gte=1), name="order_line_quantity_gte_1"),
            models.CheckConstraint(
                condition=Q(unit_price__gte=0), name="order_line_unit_price_gte_0"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.quantity} x {self.name}"

    @property
    def total(self):
        return self.unit_price * self.quantity
