import json


def canonical_json(value) -> str:
    """One text per value: keys sorted, no spaces, non-JSON values (Decimal, datetime) as
    their str(). Equal values give equal text, so its hash names the value (fingerprints,
    argument digests, the tools version)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
