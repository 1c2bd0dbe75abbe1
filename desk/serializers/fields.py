"""Field types and an address check that request bodies in more than one module share (the
saved views' API too): a boolean said plainly, an address to copy replies to, and an
address's domain as the desk matches it."""

from rest_framework import serializers
from rest_framework.fields import empty

from orders.addresses import BadAddress, at_a_host_not_a_domain, email_key, host_refusal


class StrictBooleanField(serializers.BooleanField):
    """true or false (in a form, the words "true" and "false"), not 0, 1, "yes" or "on": a
    confirmation is said plainly."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if data in ("true", "false"):
            return data == "true"
        self.fail("invalid", input=data)


class CcAddressField(serializers.EmailField):
    """An address to copy replies to. One at an IP or a bare host name is refused saying so
    (Django's validator takes `x@[127.0.0.1]` and refuses `x@[IPv6:::1]` as "not valid"), or
    with `leave_out_hosts` read as blank: an inbound email's CC line is the sender's, and no
    reason to refuse their email."""

    def __init__(self, *, leave_out_hosts: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.leave_out_hosts = leave_out_hosts

    def run_validation(self, data=empty):
        if isinstance(data, str) and at_a_host_not_a_domain(data):
            if self.leave_out_hosts:
                return ""
            raise serializers.ValidationError(host_refusal(data))
        return super().run_validation(data)


def check_domain(address: str) -> str:
    # Django's validator takes any domain Python's IDNA 2003 codec can fold into ASCII;
    # addresses are matched on their IDNA 2008 form, which a folded look-alike lacks.
    try:
        email_key(address)
    except BadAddress as exc:
        raise serializers.ValidationError(exc.message) from None
    return address
