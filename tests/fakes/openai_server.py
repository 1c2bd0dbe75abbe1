"""A fake OpenAI-compatible Chat Completions server over real HTTP.

Scripted per test: `enqueue()` responses (served in order) or `respond_with(callable)`.
A scripted response is one of
  * a dict — sent as a 200 JSON body (build it with `text_reply` / `tool_reply`),
  * `(status, body)` — body a dict (JSON) or bytes,
  * `(status, body, headers)` — the same with extra response headers, e.g. Retry-After
    (`error_body(429, "slow down", retry_after="2")`),
  * bytes — a 200 with that raw body (garbage),
  * `Sleep(seconds, then)` — wait, then send `then`,
  * `Streamed(reply, delay=..., cut_after=...)` — a reply streamed slowly, or cut off.
Every request body is recorded in `requests` for assertions.

The claim check's reading call (agent/claim_reading.py, known by its response_format schema
name) is answered apart, never from that script and never recorded in `requests`, so that a
test scripting the agent's own calls need not know about it: from `enqueue_claims()` when a
test queued answers for it (a list of claims, or any scripted response above), else by
`read_claims_with(rule)`, a callable from the text read to either; by default the model reads
no claim. Those requests are recorded in `claim_requests`.

A request with `"stream": true` gets a completion reply (a dict with choices, `Streamed` too) as
real server-sent events, as OpenAI sends them: `chat.completion.chunk`s with the text in
word-sized pieces, each tool call's id and name once and its arguments in fragments, a chunk
with the finish reason, a usage chunk when `stream_options.include_usage` asks for it, and
`data: [DONE]`, in a chunked HTTP body. Errors and garbage are sent as they are, whatever the
request asks. `streaming = False` makes the server one that does not stream: it answers every
request with the JSON body, as some compatible endpoints do.
"""

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent.claim_reading import SCHEMA_NAME
from agent.untrusted import untrusted_blocks

_ids = itertools.count(1)
HOST = "127.0.0.1"


@dataclass
class Sleep:
    seconds: float
    then: object = None


@dataclass
class Streamed:
    """A completion reply as a stream of chunks: `delay` seconds between chunks, and with
    `cut_after` the connection is closed after that many chunks, mid-body, with no finish.
    `piece_chars` sends the text in pieces of that many characters instead of words."""

    reply: dict
    delay: float = 0.0
    cut_after: int | None = None
    piece_chars: int | None = None


# Tool-call arguments are streamed in fragments this long: a JSON object never arrives whole.
ARGUMENT_FRAGMENT_CHARS = 6
WORDS = re.compile(r"\S+\s*|\s+")


def completion(
    message: dict,
    *,
    finish_reason: str,
    model: str = "gpt-4o-mini",
    prompt_tokens: int = 120,
    completion_tokens: int = 30,
) -> dict:
    return {
        "id": f"chatcmpl-fake{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def text_reply(content: str, **usage) -> dict:
    return completion(
        {"role": "assistant", "content": content, "refusal": None}, finish_reason="stop", **usage
    )


def tool_call(name: str, arguments: dict | str, call_id: str | None = None) -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": call_id or f"call_{next(_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": raw},
    }


def tool_reply(*calls: dict, content: str | None = None, **usage) -> dict:
    return completion(
        {"role": "assistant", "content": content, "refusal": None, "tool_calls": list(calls)},
        finish_reason="tool_calls",
        **usage,
    )


def claims_reply(*claims: dict | tuple) -> dict:
    """The claim reading's answer: each claim a dict in the schema's shape, or a tuple
    (order_or_product, claimed_state, sentence)."""
    listed = [
        claim
        if isinstance(claim, dict)
        else dict(zip(("order_or_product", "claimed_state", "sentence"), claim, strict=True))
        for claim in claims
    ]
    return text_reply(json.dumps({"claims": listed}, ensure_ascii=False))


def is_claim_reading(request: dict) -> bool:
    response_format = request.get("response_format")
    if not isinstance(response_format, dict):
        return False
    schema = response_format.get("json_schema")
    return isinstance(schema, dict) and schema.get("name") == SCHEMA_NAME


def text_read(request: dict) -> str:
    """The text a claim reading request asks about."""
    user = [m.get("content") or "" for m in request.get("messages", []) if m["role"] == "user"]
    blocks = untrusted_blocks(user[-1]) if user else []
    return blocks[0] if blocks else ""


def is_completion(body) -> bool:
    """Whether `body` is a chat completion the server can stream (not an error or garbage)."""
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        return False
    return bool(body["choices"]) and isinstance(body["choices"][0].get("message"), dict)


def _pieces(text: str, size: int | None) -> list[str]:
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return WORDS.findall(text)


def stream_chunks(
    reply: dict, *, include_usage: bool = True, piece_chars: int | None = None
) -> list[dict]:
    """The `chat.completion.chunk`s OpenAI streams for the completion `reply`."""
    choice = reply["choices"][0]
    message = choice["message"]

    def chunk(delta: dict | None, finish_reason: str | None = None) -> dict:
        choices = (
            []
            if delta is None
            else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        )
        body = {
            "id": reply.get("id", "chatcmpl-fake"),
            "object": "chat.completion.chunk",
            "created": reply.get("created", int(time.time())),
            "model": reply.get("model", "gpt-4o-mini"),
            "system_fingerprint": "fp_fake",
            "choices": choices,
        }
        if include_usage:
            body["usage"] = None
        return body

    content = message.get("content")
    chunks = [chunk({"role": "assistant", "content": "" if content else None, "refusal": None})]
    if isinstance(content, str):
        chunks += [chunk({"content": piece}) for piece in _pieces(content, piece_chars)]
    elif content is not None:
        chunks.append(chunk({"content": content}))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        head: dict = {"index": index, "type": call.get("type", "function")}
        if "id" in call:
            head["id"] = call["id"]
        named = {key: function[key] for key in ("name",) if key in function}
        # Only text can arrive in fragments; anything else comes whole, with the name.
        head["function"] = {**named, "arguments": "" if isinstance(arguments, str) else arguments}
        chunks.append(chunk({"tool_calls": [head]}))
        if isinstance(arguments, str):
            chunks += [
                chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
                for fragment in _pieces(arguments, ARGUMENT_FRAGMENT_CHARS)
            ]
    chunks.append(chunk({}, choice.get("finish_reason") or "stop"))
    if include_usage:
        usage_chunk = chunk(None)
        usage_chunk["usage"] = reply.get("usage")
        chunks.append(usage_chunk)
    return chunks


def error_body(
    status: int, message: str, *, code: str | None = None, retry_after: str | None = None
) -> tuple:
    """An OpenAI-style error; `code` overrides the error code (e.g. context_length_exceeded),
    `retry_after` is sent as the Retry-After header (seconds or an HTTP date)."""
    kind = {429: "rate_limit_exceeded", 400: "invalid_request_error"}.get(status, "server_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": code or kind}}
    if retry_after is None:
        return status, body
    return status, body, {"Retry-After": retry_after}


def context_length_error() -> tuple:
    return error_body(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131072 tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
    )


class FakeOpenAI:
    def __init__(self):
        self.requests: list[dict] = []
        # The HTTP headers of each request, lower-cased names, in the order of `requests`.
        self.headers: list[dict[str, str]] = []
        # False: a server that does not stream, answering JSON even to a stream request.
        self.streaming = True
        self._script: deque = deque()
        self._handler: Callable[[dict], object] | None = None
        # The claim check's reading calls, answered apart (see the module's docstring).
        self.claim_requests: list[dict] = []
        self._claim_script: deque = deque()
        self._claim_rule: Callable[[str], object] = lambda text: []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- scripting -----------------------------------------------------------------------
    def enqueue(self, *responses) -> "FakeOpenAI":
        with self._lock:
            self._script.extend(responses)
        return self

    def respond_with(self, handler: Callable[[dict], object]) -> "FakeOpenAI":
        self._handler = handler
        return self

    def enqueue_claims(self, *responses) -> "FakeOpenAI":
        """Answers to the next claim readings: lists of claims (see `claims_reply`) or any
        scripted response."""
        with self._lock:
            self._claim_script.extend(responses)
        return self

    def read_claims_with(self, rule: Callable[[str], object]) -> "FakeOpenAI":
        """How claim readings are answered once the queued ones are used: `rule(text)` gives
        a list of claims or a scripted response."""
        self._claim_rule = rule
        return self

    def _claim_reading(self, request: dict):
        with self._lock:
            self.claim_requests.append(request)
            scripted = self._claim_script.popleft() if self._claim_script else None
        answer = scripted if scripted is not None else self._claim_rule(text_read(request))
        return claims_reply(*answer) if isinstance(answer, list) else answer

    def _next_response(self, request: dict, headers: dict[str, str]):
        if is_claim_reading(request):
            return self._claim_reading(request)
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            if self._script:
                return self._script.popleft()
        if self._handler is not None:
            return self._handler(request)
        return error_body(400, "fake OpenAI server: no scripted response left")

    # --- lifecycle -----------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake OpenAI server is not running: call start() first")
        return f"http://{HOST}:{self._server.server_port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Every write leaves at once, as from a real server: the headers and the body are
            # written apart, and Nagle would hold the body for the client's delayed ACK.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(*error_body(404, f"unknown path {self.path}"))
                try:
                    request = json.loads(raw)
                except ValueError:
                    return self._send(*error_body(400, "request body is not JSON"))
                headers = {name.lower(): value for name, value in self.headers.items()}
                response = fake._next_response(request, headers)
                while isinstance(response, Sleep):
                    time.sleep(response.seconds)
                    response = response.then if response.then is not None else text_reply("")
                if request.get("stream") and fake.streaming:
                    if is_completion(response):
                        response = Streamed(response)
                    if isinstance(response, Streamed):
                        options = request.get("stream_options") or {}
                        return self._stream(response, bool(options.get("include_usage")))
                if isinstance(response, Streamed):
                    response = response.reply
                if isinstance(response, bytes):
                    return self._send(200, response, content_type="text/plain")
                if isinstance(response, tuple):
                    return self._send(*response)
                return self._send(200, response)

            def _stream(self, streamed: Streamed, include_usage: bool) -> None:
                chunks = stream_chunks(
                    streamed.reply,
                    include_usage=include_usage,
                    piece_chars=streamed.piece_chars,
                )
                frames = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
                frames.append("data: [DONE]\n\n")
                # The client drops a streamed connection after [DONE] without reading on.
                self.close_connection = True
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for sent, frame in enumerate(frames):
                        if streamed.cut_after is not None and sent >= streamed.cut_after:
                            # Gone mid-body: no last chunk, the client reads a truncated stream.
                            return
                        if sent and streamed.delay:
                            time.sleep(streamed.delay)
                        self._write_chunk(frame.encode())
                    self._write_chunk(b"")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up; nothing to tell it

            def _write_chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def _send(
                self,
                status: int,
                body,
                headers: dict | None = None,
                content_type: str = "application/json",
            ):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout); nothing to tell it

        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # --- assertions ----------------------------------------------------------------------
    def tool_messages(self, request_index: int) -> list[dict]:
        return [m for m in self.requests[request_index]["messages"] if m["role"] == "tool"]

    @property
    def worker_env(self) -> dict:
        """Environment for a worker subprocess so it talks to this server too."""
        return {
            "LLM_PROVIDER": "openai",
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": "test-key",
        }
