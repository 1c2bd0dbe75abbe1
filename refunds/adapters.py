"""Payment providers behind one interface (DESIGN §8).

Every adapter answers two questions, always keyed by the refund's idempotency key
(the RefundRequest.request_id):

* `create_refund(...)` -> `ProviderRefund`, or raises `ProviderTerminalError` (the provider
  refused; no refund exists under this key) or `ProviderUnknownOutcome` (timeout, connection
  error, 5xx: the refund may or may not exist).
* `find_refund(...)` -> `ProviderRefund | None`, or raises `ProviderUnknownOutcome` when the
  provider cannot be asked right now. A lookup never concludes "no refund" from an error.

Each adapter classifies its provider's errors in exactly one place, and anything it cannot
classify as a refusal is an unknown outcome: calling a refund "failed" when money may have left
is the one mistake reconciliation cannot repair.
"""

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

import stripe
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction

from config.money import from_minor_units, to_cents, to_minor_units
from refunds.models import SimulatedRefund

logger = logging.getLogger(__name__)

# Provider refund statuses that mean the money did not (and will not) move.
FAILED_STATUSES = frozenset({"failed", "canceled"})
# The one provider status that means the money has moved. Anything else the provider says
# (pending, requires_action, ...) is accepted but not settled yet.
SUCCEEDED_STATUS = "succeeded"


@dataclass(frozen=True)
class ProviderRefund:
    id: str
    status: str
    amount: Decimal
    currency: str

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES

    @property
    def succeeded(self) -> bool:
        return self.status == SUCCEEDED_STATUS


class ProviderError(Exception):
    def __init__(self, message: str, *, code: str = ""):
        super().__init__(message)
        self.message = message
        self.code = code


class ProviderTerminalError(ProviderError):
    """The provider refused the refund: nothing was refunded and retrying will not help."""


class ProviderUnknownOutcome(ProviderError):
    """We did not hear the provider's answer: the refund may or may not exist."""


class RefundAdapter(Protocol):
    name: str

    def create_refund(
        self,
        *,
        idempotency_key: str,
        amount: Decimal,
        currency: str,
        payment_reference: str,
        metadata: dict,
    ) -> ProviderRefund: ...

    def find_refund(
        self, *, idempotency_key: str, payment_reference: str
    ) -> ProviderRefund | None: ...


def get_adapter() -> RefundAdapter:
    """The adapter named by settings.REFUND_ADAPTER, built from the settings of the moment."""
    if settings.REFUND_ADAPTER == "simulated":
        return SimulatedAdapter()
    if settings.REFUND_ADAPTER == "stripe":
        return StripeAdapter(
            api_key=settings.STRIPE_API_KEY,
            api_base=settings.STRIPE_API_BASE,
            timeout=settings.REFUND_PROVIDER_TIMEOUT_S,
        )
    raise ImproperlyConfigured(
        f"REFUND_ADAPTER must be 'simulated' or 'stripe', not {settings.REFUND_ADAPTER!r}"
    )


# --- simulated ------------------------------------------------------------------------------


class SimulatedMode:
    NORMAL = "normal"
    # The provider makes the refund but its answer never reaches us.
    TIMEOUT = "timeout"
    # The provider declines: a terminal refusal, nothing recorded.
    FAIL = "fail"
    # The provider answers 5xx before doing anything: nothing recorded, outcome unknown to us.
    DOWN = "down"
    # The provider accepts the refund but settles it later: the ledger row stays `pending`
    # until its status is changed (by a test, or by hand in a demo).
    PENDING = "pending"

    ALL = (NORMAL, TIMEOUT, FAIL, DOWN, PENDING)


@dataclass(frozen=True)
class SimulatedCall:
    operation: str
    idempotency_key: str
    mode: str


class SimulatedCallLog:
    """Every call that reached the simulated provider in this process, for tests and demos."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[SimulatedCall] = []

    def record(self, call: SimulatedCall) -> None:
        with self._lock:
            self._calls.append(call)

    def calls(self, operation: str | None = None) -> list[SimulatedCall]:
        with self._lock:
            return [c for c in self._calls if operation is None or c.operation == operation]

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()


simulated_calls = SimulatedCallLog()


class SimulatedAdapter:
    """An in-process provider whose ledger is the SimulatedRefund table.

    Behaviour is switched by SIMULATED_PROVIDER_MODE (see SimulatedMode) and
    SIMULATED_PROVIDER_LATENCY_S; a latency above REFUND_PROVIDER_TIMEOUT_S behaves like a
    timeout: the provider finishes the refund after we stopped waiting.
    """

    name = "simulated"

    def __init__(self) -> None:
        # Read per call, so tests (settings overrides) can switch the provider's behaviour.
        self.mode = settings.SIMULATED_PROVIDER_MODE
        if self.mode not in SimulatedMode.ALL:
            raise ImproperlyConfigured(
                f"SIMULATED_PROVIDER_MODE {self.mode!r} is not one of "
                f"{', '.join(SimulatedMode.ALL)}"
            )
        self.latency = float(settings.SIMULATED_PROVIDER_LATENCY_S)
        self.timeout = float(settings.REFUND_PROVIDER_TIMEOUT_S)

    def _wait(self) -> bool:
        """Sleep like a slow provider; True when the caller would have given up."""
        if self.latency > 0:
            time.sleep(min(self.latency, self.timeout))
        return self.latency > self.timeout

    def create_refund(
        self,
        *,
        idempotency_key: str,
        amount: Decimal,
        currency: str,
        payment_reference: str,
        metadata: dict,
    ) -> ProviderRefund:
        simulated_calls.record(SimulatedCall("create", idempotency_key, self.mode))
        timed_out = self._wait()
        if self.mode == SimulatedMode.DOWN:
            raise ProviderUnknownOutcome("simulated provider answered 503", code="http_503")
        if self.mode == SimulatedMode.FAIL:
            raise ProviderTerminalError(
                "simulated provider declined the refund", code="refund_declined"
            )
        row = self._record(
            idempotency_key=idempotency_key,
            amount=to_cents(amount),
            currency=currency,
            payment_reference=payment_reference,
            metadata=metadata,
        )
        if timed_out or self.mode == SimulatedMode.TIMEOUT:
            raise ProviderUnknownOutcome(
                "simulated provider did not answer in time", code="timeout"
            )
        return _from_ledger(row)

    def find_refund(self, *, idempotency_key: str, payment_reference: str) -> ProviderRefund | None:
        simulated_calls.record(SimulatedCall("find", idempotency_key, self.mode))
        if self._wait() or self.mode == SimulatedMode.DOWN:
            raise ProviderUnknownOutcome("simulated provider unavailable", code="http_503")
        # Like a real provider, the key alone names the refund.
        row = SimulatedRefund.objects.filter(idempotency_key=idempotency_key).first()
        return _from_ledger(row) if row else None

    def _record(
        self,
        *,
        idempotency_key: str,
        amount: Decimal,
        currency: str,
        payment_reference: str,
        metadata: dict,
    ) -> SimulatedRefund:
        """Insert the ledger row, or replay the one already stored under this key."""
        try:
            with transaction.atomic():
                return SimulatedRefund.objects.create(
                    provider_refund_id=f"sim_re_{uuid.uuid4().hex[:20]}",
                    idempotency_key=idempotency_key,
                    payment_reference=payment_reference,
                    amount=amount,
                    currency=currency,
                    metadata=metadata,
                    status="pending" if self.mode == SimulatedMode.PENDING else "succeeded",
                )
        except IntegrityError:
            row = SimulatedRefund.objects.get(idempotency_key=idempotency_key)
        if (row.amount, row.currency, row.payment_reference) != (
            amount,
            currency,
            payment_reference,
        ):
            # What a real provider does with a reused key: refuse, and keep the first refund.
            # For us the key is taken by a refund we may not know about: unknown, reconcile.
            raise ProviderUnknownOutcome(
                "idempotency key reused with different parameters", code="idempotency_error"
            )
        return row


def _from_ledger(row: SimulatedRefund) -> ProviderRefund:
    return ProviderRefund(
        id=row.provider_refund_id, status=row.status, amount=row.amount, currency=row.currency
    )


# --- stripe ---------------------------------------------------------------------------------

# Stripe said no, and said it about this request: no refund was created.
STRIPE_TERMINAL_ERRORS = (
    stripe.CardError,
    stripe.InvalidRequestError,
    stripe.AuthenticationError,
    stripe.PermissionError,
)


@contextmanager
def stripe_errors_classified() -> Iterator[None]:
    """The one place Stripe errors become terminal refusals or unknown outcomes.

    Connection errors and timeouts (APIConnectionError), 5xx and 409 (APIError), rate limits
    and idempotency conflicts (the key already names a refund, possibly with other
    parameters) are all unknown: reconciliation asks Stripe what exists under the key.
    """
    try:
        yield
    except STRIPE_TERMINAL_ERRORS as exc:
        raise ProviderTerminalError(
            exc.user_message or str(exc), code=exc.code or type(exc).__name__
        ) from exc
    except stripe.StripeError as exc:
        kind = type(exc).__name__
        status = f" (HTTP {exc.http_status})" if exc.http_status else ""
        raise ProviderUnknownOutcome(
            f"{kind}{status}: {exc.user_message or exc}", code=exc.code or kind
        ) from exc


class StripeAdapter:
    """Stripe through its official SDK. No SDK retries: an unanswered call is reconciled."""

    name = "stripe"

    def __init__(self, *, api_key: str, api_base: str, timeout: float):
        if not api_key:
            raise ImproperlyConfigured("REFUND_ADAPTER=stripe needs STRIPE_API_KEY")
        self.client = stripe.StripeClient(
            api_key,
            base_addresses={"api": api_base.rstrip("/")} if api_base else None,
            max_network_retries=0,
            http_client=stripe.RequestsClient(timeout=timeout),
        )

    def create_refund(
        self,
        *,
        idempotency_key: str,
        amount: Decimal,
        currency: str,
        payment_reference: str,
        metadata: dict,
    ) -> ProviderRefund:
        try:
            minor_units = to_minor_units(amount, currency)
        except ValueError as exc:
            # Refused before anything is sent: no refund exists under this key.
            raise ProviderTerminalError(str(exc), code="amount_not_expressible") from exc
        with stripe_errors_classified():
            refund = self.client.v1.refunds.create(
                {
                    "payment_intent": payment_reference,
                    "amount": minor_units,
                    # The unit `amount` is counted in, stated rather than left for the
                    # provider to assume.
                    "currency": currency.lower(),
                    "metadata": metadata,
                },
                {"idempotency_key": idempotency_key},
            )
        return _from_stripe(refund)

    def find_refund(self, *, idempotency_key: str, payment_reference: str) -> ProviderRefund | None:
        try:
            with stripe_errors_classified():
                page = self.client.v1.refunds.list(
                    {"payment_intent": payment_reference, "limit": 100}
                )
                for refund in page.auto_paging_iter():
                    metadata = refund.metadata.to_dict() if refund.metadata else {}
                    if metadata.get("request_id") == idempotency_key:
                        return _from_stripe(refund)
        except ProviderTerminalError as exc:
            # A refused lookup tells us nothing about whether the refund exists.
            raise ProviderUnknownOutcome(exc.message, code=exc.code) from exc
        return None


def _from_stripe(refund) -> ProviderRefund:
    """Stripe's refund in major units, read by the currency Stripe says it is in."""
    currency = str(refund.currency).upper()
    return ProviderRefund(
        id=refund.id,
        status=refund.status,
        amount=from_minor_units(refund.amount, currency),
        currency=currency,
    )
