import anyio
from django.core.management.base import BaseCommand, CommandError

from agent.mcp.http import MCP_PATH, serve_http
from agent.mcp.stdio import TICKET_VARIABLE, TOKEN_VARIABLE, serve_stdio


class Command(BaseCommand):
    help = (
        "Serve the desk's tools to MCP hosts (DESIGN §12): streamable HTTP at /mcp, "
        "authenticated by a desk API token (Authorization: Bearer <token>) and bound to the "
        "ticket named by X-Desk-Ticket; or, with --stdio, one session over stdin and stdout "
        f"bound by {TOKEN_VARIABLE} and {TICKET_VARIABLE} in the environment."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
        parser.add_argument("--port", type=int, default=8001, help="port to listen on")
        parser.add_argument(
            "--stdio",
            action="store_true",
            help=f"serve one session over stdio ({TOKEN_VARIABLE}, {TICKET_VARIABLE})",
        )

    def handle(self, *args, **options):
        if options["stdio"]:
            # Nothing may be written to stdout: it carries the protocol.
            refusal = anyio.run(serve_stdio)
            if refusal is not None:
                raise CommandError(f"MCP session refused: {refusal.message}")
            return
        self.stderr.write(
            f"Serving the desk's tools over MCP at http://{options['host']}:{options['port']}"
            f"{MCP_PATH}"
        )
        serve_http(host=options["host"], port=options["port"])
