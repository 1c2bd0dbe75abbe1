from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A string, not a number turned into one: `{"message": 0}` is a 400."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)
