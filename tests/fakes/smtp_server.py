"""A fake mail server over a real SMTP socket, speaking enough of RFC 5321 for smtplib.

* EHLO/HELO, MAIL FROM, RCPT TO, DATA (dot-unstuffed), RSET, NOOP, QUIT; anything else
  answers 502. Commands out of order answer 503, as a real server does.
* Every message accepted is kept in `received`: the envelope and the raw bytes, parsed with
  the `email` package.
* Scripted trouble for the next connections: `refuse_next(n, at="greeting")` answers 421 to
  the greeting and hangs up; `at="mail"` greets, then answers 451 to MAIL FROM. The server
  recovers on its own after n connections; `refuse_until_recovered()` refuses until
  `recover()`. `refused` counts the connections turned away.
"""

import email
import email.policy
import socketserver
import threading
from dataclasses import dataclass, field
from email.message import EmailMessage

HOSTNAME = "fake-smtp.test"
REFUSALS = {
    "greeting": b"421 4.3.2 Service not available, try again later\r\n",
    "mail": b"451 4.3.0 Mailbox temporarily unavailable, try again later\r\n",
}
FOREVER = -1
MAX_LINE = 10_000


@dataclass
class ReceivedMail:
    mail_from: str
    rcpt_to: list[str]
    raw: bytes
    message: EmailMessage = field(init=False)

    def __post_init__(self) -> None:
        # Lines arrive with CRLF; the parsed view uses the line ends Python text uses.
        parsed = email.message_from_bytes(
            self.raw.replace(b"\r\n", b"\n"), policy=email.policy.default
        )
        self.message = parsed  # an EmailMessage, as the default policy makes

    def header(self, name: str) -> str | None:
        """A header's value as a reader sees it: unfolded, without the space a long header
        (a Message-ID, say) is folded with."""
        value = self.message[name]
        return None if value is None else str(value).strip()

    @property
    def text(self) -> str:
        part = self.message.get_body(preferencelist=("plain",))
        return part.get_content() if part is not None else ""


class FakeSMTPServer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[ReceivedMail] = []
        self.connections = 0
        self.refused = 0
        self._refusals_left = 0
        self._refuse_at = "greeting"
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _handler_for(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        return self.server.server_address[0]

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        """What EMAIL_URL says to reach this server."""
        return f"smtp://{self.host}:{self.port}"

    def start(self) -> "FakeSMTPServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        """Close the listening socket: connecting now is refused, as to a server that is down.
        Safe to call twice."""
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    # --- scripting --------------------------------------------------------------------------
    def refuse_next(self, count: int, at: str = "greeting") -> None:
        if at not in REFUSALS:
            raise ValueError(f"refuse at one of {sorted(REFUSALS)}")
        with self.lock:
            self._refusals_left, self._refuse_at = count, at

    def refuse_until_recovered(self, at: str = "greeting") -> None:
        self.refuse_next(FOREVER, at)

    def recover(self) -> None:
        with self.lock:
            self._refusals_left = 0

    def _refusal_for_new_connection(self) -> str | None:
        """Whether this connection is turned away, and where (counted once per connection)."""
        with self.lock:
            self.connections += 1
            if self._refusals_left == 0:
                return None
            if self._refusals_left > 0:
                self._refusals_left -= 1
            self.refused += 1
            return self._refuse_at

    def _keep(self, mail: ReceivedMail) -> int:
        with self.lock:
            self.received.append(mail)
            return len(self.received)


class HeldSMTPServer(FakeSMTPServer):
    """The fake mail server, greeting no one until `open()` (a client waits at most
    `hold_limit_s`): a reply stays visibly queued while the sender waits at the door."""

    def __init__(self, hold_limit_s: float) -> None:
        super().__init__()
        self.hold_limit_s = hold_limit_s
        self.knocked = threading.Event()  # a client has connected and waits for the greeting
        self.opened = threading.Event()

    def open(self) -> None:
        self.opened.set()

    def stop(self) -> None:
        self.open()  # never leave a client hanging
        super().stop()

    def _refusal_for_new_connection(self) -> str | None:
        # Called by the handler for every new connection, before it greets.
        self.knocked.set()
        self.opened.wait(timeout=self.hold_limit_s)
        return super()._refusal_for_new_connection()


def _handler_for(fake: FakeSMTPServer):
    class Handler(socketserver.StreamRequestHandler):
        timeout = 30

        def handle(self) -> None:
            refusal = fake._refusal_for_new_connection()
            if refusal == "greeting":
                self.wfile.write(REFUSALS["greeting"])
                return
            self.refuse_mail = refusal == "mail"
            self.reset()
            self.reply(f"220 {HOSTNAME} ESMTP fake ready")
            while True:
                line = self.rfile.readline(MAX_LINE)
                if not line:
                    return  # the client went away without QUIT
                verb, _, argument = line.decode("utf-8", "replace").strip().partition(" ")
                if not self.dispatch(verb.upper(), argument.strip()):
                    return

        def reset(self) -> None:
            self.mail_from: str | None = None
            self.rcpt_to: list[str] = []

        def reply(self, text: str) -> None:
            self.wfile.write(text.encode() + b"\r\n")

        def dispatch(self, verb: str, argument: str) -> bool:
            """Answer one command; False ends the session."""
            if verb == "EHLO":
                self.reset()
                self.reply(f"250-{HOSTNAME} greets {argument}\r\n250-8BITMIME\r\n250 SIZE 10485760")
            elif verb == "HELO":
                self.reset()
                self.reply(f"250 {HOSTNAME}")
            elif verb == "MAIL":
                self.mail(argument)
            elif verb == "RCPT":
                self.rcpt(argument)
            elif verb == "DATA":
                self.data()
            elif verb == "RSET":
                self.reset()
                self.reply("250 2.0.0 OK")
            elif verb == "NOOP":
                self.reply("250 2.0.0 OK")
            elif verb == "QUIT":
                self.reply("221 2.0.0 Bye")
                return False
            else:
                self.reply("502 5.5.2 Command not implemented")
            return True

        def mail(self, argument: str) -> None:
            if self.refuse_mail:
                self.wfile.write(REFUSALS["mail"])
            elif not argument.upper().startswith("FROM:"):
                self.reply("501 5.5.4 Syntax: MAIL FROM:<address>")
            else:
                self.reset()
                self.mail_from = _address(argument[5:])
                self.reply("250 2.1.0 OK")

        def rcpt(self, argument: str) -> None:
            if self.mail_from is None:
                self.reply("503 5.5.1 MAIL first")
            elif not argument.upper().startswith("TO:"):
                self.reply("501 5.5.4 Syntax: RCPT TO:<address>")
            else:
                self.rcpt_to.append(_address(argument[3:]))
                self.reply("250 2.1.5 OK")

        def data(self) -> None:
            if self.mail_from is None or not self.rcpt_to:
                self.reply("503 5.5.1 RCPT first")
                return
            self.reply("354 End data with <CR><LF>.<CR><LF>")
            lines = []
            while True:
                line = self.rfile.readline(MAX_LINE)
                if not line or line in (b".\r\n", b".\n"):
                    break
                lines.append(line[1:] if line.startswith(b"..") else line)
            if not line:
                return  # cut off mid-message: nothing was accepted
            number = fake._keep(ReceivedMail(self.mail_from, self.rcpt_to, b"".join(lines)))
            self.reset()
            self.reply(f"250 2.0.0 OK queued as {number}")

    return Handler


def _address(argument: str) -> str:
    """`<someone@example.com> SIZE=123` -> someone@example.com"""
    path = argument.strip().split(" ")[0]
    return path.strip("<>")
