from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower


class Customer(models.Model):
    name = models.CharField(max_length=200)
    email = models.EmailField(unique=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            # Mail addresses are matched ignoring case (inbound email): Bob@x and bob@x are one
            # customer, even when their first two emails arrive at once.
            models.UniqueConstraint(Lower("email"), name="customer_email_unique_ignoring_case"),
        ]

    def __str__(self) -> str:
        return self.name


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
