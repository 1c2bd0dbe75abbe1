from rest_framework import exceptions
from rest_framework.pagination import PageNumberPagination


class StrictPageNumberPagination(PageNumberPagination):
    """`?page=` must be a positive whole number when given: DRF would quietly read an empty
    value as page 1, so a client with a bug would never hear about it."""

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and not (raw.isdigit() and int(raw) >= 1):
            raise exceptions.ValidationError(
                {self.page_query_param: ["A page number is a whole number from 1."]}
            )
        return super().get_page_number(request, paginator)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"]["minimum"] = 1
        return parameters
