"""The API's JSON parser (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES, and every view that names
its parsers): DRF's, with JSON nested deeper than Python's parser can follow refused as
malformed (400) instead of escaping as a RecursionError (500)."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply.") from None
