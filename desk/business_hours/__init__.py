"""DESIGN §19 business hours: the calendar the SLA clocks count in, over the API."""
