from django.conf import settings
from django.db import models
from django.db.models import Q


class Ticket(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PENDING = "pending", "Pending"
        SOLVED = "solved", "Solved"
        CLOSED = "closed", "Closed"

    reference = models.CharField(max_length=20, unique=True)
    customer = models.ForeignKey(
        "orders.Customer", on_delete=models.PROTECT, related_name="tickets"
    )
    subject = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_tickets",
    )
    order = models.ForeignKey(
        "orders.Order", null=True, blank=True, on_delete=models.PROTECT, related_name="tickets"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reference__regex=r"^TCK-[0-9]+$"), name="ticket_reference_format"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference} {self.subject}"


class TicketMessage(models.Model):
    class AuthorKind(models.TextChoices):
        CUSTOMER = "customer", "Customer"
        AGENT = "agent", "Agent"
        ASSISTANT = "assistant", "Assistant"
        SYSTEM = "system", "System"

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="messages")
    author_kind = models.CharField(max_length=16, choices=AuthorKind.choices)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.ticket.reference} {self.author_kind}: {self.body[:40]}"
