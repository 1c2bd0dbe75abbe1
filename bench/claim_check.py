"""The claim check on labelled replies: how many false claims it stops, how many true or hedged
replies it asks to confirm.

    .venv/bin/python bench/claim_check.py tests/data/claims/tuning.jsonl [--show]
    OPENAI_BASE_URL=http://127.0.0.1:8799/v1 OPENAI_API_KEY=local AGENT_MODEL=local \
        CLAIM_CHECK_TIMEOUT_S=60 .venv/bin/python bench/claim_check.py FILE   # and with a model

Each line of FILE is a reply with the state it is sent in: {"id", "ticket", "order_id",
"refund_state": null | "pending_approval" | "approved" | "executing" | "succeeded" | "failed" |
"rejected" | "withdrawn", "amount", "language", "text", "kind": "false" | "true" | "hedged" |
"unrelated", "false_claim"}. Per state, a fresh demo shop (evals/shop.py: a migrated, seeded
SQLite file copied per state) gets that refund on the ticket's order: pending_approval and
succeeded written as history, rejected and withdrawn through the desk's services, the others
written as pending_approval and moved to their status in place (the check reads only the
status). Each text is then checked as a public reply (agent.answer_check.contradicted_claims):
stopped when it lists a claim.

It prints, per mode (without a model; and with the model at OPENAI_BASE_URL when that is set):
false claims stopped / false claims, true or hedged replies asked to confirm / true or hedged
replies, unrelated replies asked to confirm, the same per language, and the ids of the misses;
`--show` prints their texts too. Readings are cached in memory for the run only.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

# Statuses the eval setup steps reach; the others are set up as PLACED_AS and then moved.
SET_UP_DIRECTLY = ("pending_approval", "succeeded", "rejected", "withdrawn")
PLACED_AS = "pending_approval"
LOCAL_CACHE = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def state_key(row: dict) -> tuple:
    return (row["ticket"], row["order_id"], row["refund_state"], row["amount"])


def set_up(key: tuple):
    """The ticket of `key`, with its refund in the state `key` says."""
    from evals.case_setup import apply_setup
    from orders.models import Order
    from refunds.models import RefundRequest
    from tickets.models import Ticket

    reference, order_id, status, amount = key
    ticket = Ticket.objects.get(reference=reference)
    if status is None:
        return ticket
    placed = status if status in SET_UP_DIRECTLY else PLACED_AS
    delivered = Order.objects.get(order_id=order_id).status == Order.Status.DELIVERED
    step = {
        "kind": "refund",
        "order_id": order_id,
        "amount": amount,
        "status": placed,
        # A reason the policy allows in the order's state.
        "reason": "damaged" if delivered else "not_received",
    }
    apply_setup([step], ticket=ticket)
    if placed != status:
        RefundRequest.objects.filter(ticket=ticket, order__order_id=order_id).update(status=status)
    return ticket


def check_all(rows: list[dict], template: Path, workdir: Path) -> dict[str, bool]:
    """Row id -> whether the check stopped its text, one fresh shop per state."""
    from agent.answer_check import contradicted_claims
    from evals.shop import discard, fresh_copy

    by_state: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        by_state[state_key(row)].append(row)
    stopped = {}
    database = workdir / "case.sqlite3"
    for key, group in by_state.items():
        fresh_copy(template, database)
        ticket = set_up(key)
        for row in group:
            stopped[row["id"]] = bool(contradicted_claims(text=row["text"], ticket=ticket))
        discard(database)
    return stopped


def ratio(hits: int, total: int) -> str:
    return f"{hits}/{total} ({hits / total:.0%})" if total else "0/0"


def report(mode: str, rows: list[dict], stopped: dict[str, bool], seconds: float, show: bool):
    print(f"\n== {mode} ({seconds:.1f} s, {len(rows)} replies)")
    by_language: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_language[row["language"]].append(row)

    def figures(part: list[dict]) -> tuple[str, str, str]:
        false = [r for r in part if r["false_claim"]]
        fair = [r for r in part if r["kind"] in ("true", "hedged")]
        unrelated = [r for r in part if r["kind"] == "unrelated"]
        return (
            ratio(sum(stopped[r["id"]] for r in false), len(false)),
            ratio(sum(stopped[r["id"]] for r in fair), len(fair)),
            ratio(sum(stopped[r["id"]] for r in unrelated), len(unrelated)),
        )

    print(f"{'':10} {'false claims stopped':>22} {'true+hedged asked':>20} {'unrelated asked':>16}")
    for language in sorted(by_language):
        print(f"{language:10} " + " ".join(f"{f:>20}" for f in figures(by_language[language])))
    print(f"{'all':10} " + " ".join(f"{f:>20}" for f in figures(rows)))
    missed = [r for r in rows if r["false_claim"] and not stopped[r["id"]]]
    asked = [r for r in rows if not r["false_claim"] and stopped[r["id"]]]
    for title, part in (("false claims sent", missed), ("asked to confirm", asked)):
        print(f"{title}: {' '.join(r['id'] for r in part) or '-'}")
        if show:
            for r in part:
                print(f"  {r['id']} [{r['kind']}, {r['refund_state']}] {r['text']!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--show", action="store_true", help="print the texts of the misses")
    args = parser.parse_args()

    import django

    django.setup()
    from django.test import override_settings

    from evals.shop import build_template

    rows = load(args.file)
    modes = [("without a model", {"LLM_PROVIDER": "offline"})]
    if os.environ.get("OPENAI_BASE_URL"):
        modes.append(("with the model", {"LLM_PROVIDER": "openai"}))
    with tempfile.TemporaryDirectory(prefix="claim-bench-") as workdir:
        template = Path(workdir) / "template.sqlite3"
        build_template(template)
        for mode, overrides in modes:
            started = time.monotonic()
            with override_settings(CACHES=LOCAL_CACHE, **overrides):
                stopped = check_all(rows, template, Path(workdir))
            report(mode, rows, stopped, time.monotonic() - started, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
