"""A fake Stripe API over real HTTP, speaking enough of the refunds protocol for the adapter.

* `POST /v1/refunds` (form-encoded: payment_intent, amount in the currency's minor units,
  currency, metadata[...]) with Stripe's idempotency semantics: a repeated `Idempotency-Key`
  with the same parameters replays the first response (`Idempotent-Replayed: true`); with
  other parameters it answers 400 `idempotency_error`. Refunding more than is left on the
  payment intent answers 400 `charge_already_refunded`-style `invalid_request_error`.
* `GET /v1/refunds?payment_intent=...&limit=...` and `GET /v1/refunds/{id}`.
* Scripted trouble: `fail_next(n, status=500)` answers the next n requests with an error
  before doing anything; `stall_next(n, seconds)` does the work, then sleeps before answering
  (the provider refunded, the client timed out); `decline_next(n)` answers 402 card_error.
* `requests` logs every request; `refunds` is the provider's truth: each refund keeps the
  amount and currency it was created with, and answers in the currency it was sent.
"""

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class LoggedRequest:
    method: str
    path: str
    params: dict
    headers: dict


@dataclass
class _Script:
    kind: str
    status: int = 500
    seconds: float = 0.0


@dataclass
class FakeStripe:
    api_key: str = "sk_test_fake_refund_desk"
    # payment_intent -> amount captured in minor units; unknown intents get `default_captured`.
    captured: dict = field(default_factory=dict)
    default_captured: int = 1_000_000
    # The payment intents' currency: what a refund is in when the request names none.
    currency: str = "cny"
    # What a new refund's status is: "pending" makes Stripe accept it and settle it later
    # (a test then changes the stored refund's status).
    new_refund_status: str = "succeeded"

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[LoggedRequest] = []
        self.refunds: dict[str, dict] = {}
        self.idempotent: dict[str, tuple[dict, int, dict]] = {}
        self.script: list[_Script] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeStripe":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- scripting --------------------------------------------------------------------------
    def fail_next(self, count: int = 1, status: int = 500) -> None:
        with self.lock:
            self.script.extend(_Script("fail", status=status) for _ in range(count))

    def stall_next(self, count: int = 1, seconds: float = 2.0) -> None:
        with self.lock:
            self.script.extend(_Script("stall", seconds=seconds) for _ in range(count))

    def decline_next(self, count: int = 1) -> None:
        with self.lock:
            self.script.extend(_Script("decline", status=402) for _ in range(count))

    # --- assertions -------------------------------------------------------------------------
    def create_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/refunds"]

    # --- the protocol -----------------------------------------------------------------------
    def handle(self, method: str, path: str, params: dict, headers: dict) -> tuple[int, dict]:
        with self.lock:
            self.requests.append(LoggedRequest(method, path, params, headers))
            script = self.script.pop(0) if self.script else None
        if headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, _error("invalid_request_error", "Invalid API Key provided.")
        if script and script.kind == "fail":
            return script.status, _error("api_error", "Something went wrong on Stripe's end.")
        if script and script.kind == "decline":
            return 402, _error("card_error", "The refund was declined.", code="card_declined")
        if method == "POST" and path == "/v1/refunds":
            status, body = self._create(params, headers.get("idempotency-key"))
        elif method == "GET" and path == "/v1/refunds":
            status, body = self._list(params)
        elif method == "GET" and path.startswith("/v1/refunds/"):
            status, body = self._retrieve(path.rsplit("/", 1)[1])
        else:
            status, body = (
                404,
                _error("invalid_request_error", f"Unrecognized request URL ({method}: {path})."),
            )
        if script and script.kind == "stall":
            time.sleep(script.seconds)
        return status, body

    def _create(self, params: dict, key: str | None) -> tuple[int, dict]:
        with self.lock:
            if key and key in self.idempotent:
                first_params, status, body = self.idempotent[key]
                if first_params != params:
                    return 400, _error(
                        "idempotency_error",
                        "Keys for idempotent requests can only be used with the same "
                        f"parameters they were first used with. Try using a key other than "
                        f"'{key}' if you meant to execute a different request.",
                    )
                return status, {**body, "_replayed": True}
            status, body = self._new_refund(params)
            if key:
                self.idempotent[key] = (params, status, body)
            return status, body

    def _new_refund(self, params: dict) -> tuple[int, dict]:
        intent = params.get("payment_intent", "")
        if not intent:
            return 400, _error(
                "invalid_request_error", "Must provide payment_intent.", param="payment_intent"
            )
        captured = self.captured.get(intent, self.default_captured)
        refunded = sum(r["amount"] for r in self.refunds.values() if r["payment_intent"] == intent)
        amount = int(params.get("amount", captured - refunded))
        if amount <= 0 or refunded + amount > captured:
            return 400, _error(
                "invalid_request_error",
                f"Refund amount ({amount}) is greater than unrefunded amount on "
                f"charge ({captured - refunded})",
                param="amount",
                code="amount_too_large",
            )
        metadata = {
            k[len("metadata[") : -1]: v for k, v in params.items() if k.startswith("metadata[")
        }
        refund = {
            "id": f"re_{uuid.uuid4().hex[:24]}",
            "object": "refund",
            "amount": amount,
            "currency": params.get("currency", self.currency),
            "status": self.new_refund_status,
            "payment_intent": intent,
            "metadata": metadata,
            "created": int(time.time()),
            "reason": None,
        }
        self.refunds[refund["id"]] = refund
        return 200, refund

    def _list(self, params: dict) -> tuple[int, dict]:
        with self.lock:
            data = [
                r
                for r in reversed(self.refunds.values())
                if r["payment_intent"] == params.get("payment_intent", r["payment_intent"])
            ]
        limit = int(params.get("limit", 10))
        return 200, {
            "object": "list",
            "url": "/v1/refunds",
            "has_more": len(data) > limit,
            "data": data[:limit],
        }

    def _retrieve(self, refund_id: str) -> tuple[int, dict]:
        with self.lock:
            refund = self.refunds.get(refund_id)
        if refund is None:
            return 404, _error(
                "invalid_request_error",
                f"No such refund: '{refund_id}'",
                param="id",
                code="resource_missing",
            )
        return 200, refund


def _error(kind: str, message: str, *, code: str | None = None, param: str | None = None) -> dict:
    error = {"type": kind, "message": message}
    if code:
        error["code"] = code
    if param:
        error["param"] = param
    return {"error": error}


def _handler_for(fake: FakeStripe) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self, method: str) -> None:
            url = urlsplit(self.path)
            if method == "POST":
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
            else:
                raw = url.query
            params = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, body = fake.handle(method, url.path, params, headers)
            replayed = body.pop("_replayed", False)
            payload = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Request-Id", f"req_{uuid.uuid4().hex[:14]}")
                if replayed:
                    self.send_header("Idempotent-Replayed", "true")
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a scripted stall): like a lost answer

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def log_message(self, format, *args) -> None:
            pass

    return Handler
