"""GET /api/customers/<id>/: a customer with their orders, tickets and refund requests, as
tickets.selectors.customer_overview reads them."""

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from desk.serializers.customers import CustomerSerializer
from orders.models import Customer
from tickets import selectors


@extend_schema(
    responses={200: CustomerSerializer, **error_responses(401, 403, 404, e404="No such customer.")}
)
class CustomerDetailApi(APIView):
    def get(self, request, customer_id: int):
        try:
            overview = selectors.customer_overview(customer_id=customer_id)
        except Customer.DoesNotExist:
            raise Http404("No such customer.") from None
        return Response(CustomerSerializer(overview).data)
