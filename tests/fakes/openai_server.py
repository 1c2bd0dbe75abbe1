"""A fake OpenAI-compatible Chat Completions server over real HTTP.

Scripted per test: `enqueue()` responses (served in order) or `respond_with(callable)`.
A scripted response is one of
  * a dict — sent as a 200 JSON body (build it with `text_reply` / `tool_reply`),
  * `(status, body)` — body a dict (JSON) or bytes,
  * `(status, body, headers)` — the same with extra response headers, e.g. Retry-After
    (`error_body(429, "slow down", retry_after="2")`),
  * bytes — a 200 with that raw body (garbage),
  * `Sleep(seconds, then)` — wait, then send `then`.
Every request body is recorded in `requests` for assertions.
"""

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)
HOST = "127.0.0.1"


@dataclass
class Sleep:
    seconds: float
    then: object = None


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
        self._script: deque = deque()
        self._handler: Callable[[dict], object] | None = None
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

    def _next_response(self, request: dict):
        with self._lock:
            self.requests.append(request)
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
                response = fake._next_response(request)
                while isinstance(response, Sleep):
                    time.sleep(response.seconds)
                    response = response.then if response.then is not None else text_reply("")
                if isinstance(response, bytes):
                    return self._send(200, response, content_type="text/plain")
                if isinstance(response, tuple):
                    return self._send(*response)
                return self._send(200, response)

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
