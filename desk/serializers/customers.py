"""A customer as the API answers it (tickets.selectors.customer_overview): their orders with
what is refunded and refundable, their tickets in summary, their refund requests."""

from rest_framework import serializers

from desk.serializers.tickets import TicketSummarySerializer


class CustomerOrderSerializer(serializers.Serializer):
    order_id = serializers.CharField(source="order.order_id")
    status = serializers.CharField(source="order.status")
    currency = serializers.CharField(source="order.currency")
    amount_paid = serializers.DecimalField(
        source="order.amount_paid", max_digits=12, decimal_places=2
    )
    refunded = serializers.DecimalField(max_digits=12, decimal_places=2)
    refundable = serializers.DecimalField(max_digits=12, decimal_places=2)
    placed_at = serializers.DateTimeField(source="order.placed_at")
    delivered_at = serializers.DateTimeField(source="order.delivered_at", allow_null=True)


class CustomerRefundSerializer(serializers.Serializer):
    request_id = serializers.CharField()
    ticket = serializers.CharField(source="ticket.reference", allow_null=True, default=None)
    order_id = serializers.CharField(source="order.order_id")
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    reason = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()


class CustomerSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="customer.pk")
    name = serializers.CharField(source="customer.name")
    email = serializers.CharField(source="customer.email")
    orders = CustomerOrderSerializer(many=True)
    tickets = TicketSummarySerializer(many=True)
    refund_requests = CustomerRefundSerializer(many=True, source="refunds")
