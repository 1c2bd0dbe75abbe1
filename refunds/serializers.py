from rest_framework import serializers

from refunds.models import RefundConfirmation, RefundRequest


class RefundConfirmationSerializer(serializers.ModelSerializer):
    decided_by: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = RefundConfirmation
        fields = [
            "version",
            "fingerprint",
            "status",
            "expires_at",
            "decided_by",
            "decided_at",
            "decision_note",
            "requester_note",
            "created_at",
        ]


class PolicyVerdictSerializer(serializers.Serializer):
    clause = serializers.CharField()
    outcome = serializers.CharField()
    detail = serializers.CharField()


class RefundSerializer(serializers.ModelSerializer):
    ticket: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="reference", read_only=True, allow_null=True
    )
    order_id = serializers.CharField(source="order.order_id", read_only=True)
    customer = serializers.CharField(source="order.customer.name", read_only=True)
    requested_by: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    policy_evaluation = PolicyVerdictSerializer(many=True, read_only=True)
    confirmations = RefundConfirmationSerializer(many=True, read_only=True)
    run = serializers.UUIDField(source="run_id", read_only=True, allow_null=True)
    untrusted_warning = serializers.SerializerMethodField(
        help_text="The proposing run read untrusted text that looks like instructions."
    )

    class Meta:
        model = RefundRequest
        fields = [
            "request_id",
            "ticket",
            "order_id",
            "customer",
            "amount",
            "currency",
            "reason",
            "explanation",
            "status",
            "requested_by",
            "run",
            "provider_refund_id",
            "policy_evaluation",
            "untrusted_warning",
            "confirmations",
            "created_at",
            "updated_at",
        ]

    def get_untrusted_warning(self, refund: RefundRequest) -> bool:
        return bool(refund.run is not None and refund.run.untrusted_instructions)


class ApproveSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1)
    fingerprint = serializers.RegexField(r"^[0-9a-f]{64}$", max_length=64)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class RejectSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class WithdrawSerializer(serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
