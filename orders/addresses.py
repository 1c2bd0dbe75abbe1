"""Who a sender is (DESIGN invariant 11): the one form of an email address that customers are
matched on."""

import string

import idna

from config.errors import ApplicationError

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class BadAddress(ApplicationError):
    code = "invalid_email"


def at_a_host_not_a_domain(address: str) -> bool:
    """Whether `address` names a machine rather than a domain: an IP literal (`x@[127.0.0.1]`,
    `x@[IPv6:::1]`) or a host name without a dot (`x@localhost`). Django's validator accepts
    both; mail sent there goes to whatever machine that is, inside the network too."""
    local, at, domain = address.strip().rpartition("@")
    domain = domain.rstrip(".")
    return bool(local and at) and (domain.startswith("[") or "." not in domain)


def host_refusal(address: str) -> str:
    return (
        f"{address[:100]} names a server, not a domain: replies are copied only to addresses "
        "at a domain name (like name@example.com)."
    )


def email_key(address: str) -> str:
    """`address` as a customer is matched on it: ASCII letters lower-cased, every other
    character as it is (no Unicode case folding: the dotless i, the long s and the Kelvin sign
    stay themselves), and the domain IDNA-encoded.

    IDNA 2008 (the `idna` package) without UTS 46's mapping: a domain must already be what
    IDNA 2008 allows, or it is refused; it is never mapped onto another. Python's own "idna"
    codec is IDNA 2003, whose nameprep folds fullwidth letters, capitals and the Kelvin sign
    into ASCII (`example.com` with a fullwidth e becomes `example.com`) and ß into ss: the
    look-alikes this key exists to keep apart."""
    local, at, domain = address.translate(_ASCII_LOWER).rpartition("@")
    if not (local and at and domain):
        raise BadAddress(f"{address} is not an email address.")
    if not domain.isascii():
        try:
            domain = idna.encode(domain, uts46=False).decode("ascii")
        except idna.IDNAError:
            raise BadAddress(
                f"{address} cannot be used: its domain is not a valid internationalised "
                "domain name (IDNA 2008)."
            ) from None
    return f"{local}@{domain}"
