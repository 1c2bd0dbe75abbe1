"""The desk's step against LangGraph + PostgresSaver (durability="sync"), measured side by side.

Rounds alternate (desk, peer, desk, peer, ...) so that whatever else the machine is doing
weighs on both alike. A desk round is `bench/agent_overhead.py --json --only postgresql --raw`
(its own throwaway database, BENCH_RUNS runs of 3 steps); a peer round is
`bench/peers/langgraph_step.py` in its own venv on a throwaway database that this script
migrates and seeds like the desk's (`test_refund_desk_bench_peer`, dropped at the end). Both
use a zero-latency fake model over HTTP and make the same two tool calls per step.

    .venv/bin/python bench/peers/compare.py [--rounds 5] [--runs 20] [--json] \
        [--peer-tools together|in-turn|both]

The peer runs a step's two tool calls at the same time by default, as the desk runs its quick
lookups; `in-turn` one after the other; `both` measures both peers in every round. Every round
also measures the floor (`floor_step.py`): the same step with only the work neither side can
leave out (the model call, the two reads, two commits that wait for the disk), done bare, so
that what each side adds to it shows; `--no-floor` leaves it out.

PostgreSQL is BENCH_POSTGRES_URL's server (default
postgres://postgres@127.0.0.1:5432/refund_desk_bench). The peer venv comes first: see
bench/peers/README.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

PEERS_DIR = Path(__file__).resolve().parent
BASE_DIR = PEERS_DIR.parent.parent
PEER_PYTHON = PEERS_DIR / ".venv" / "bin" / "python"
DESK_BENCH = BASE_DIR / "bench" / "agent_overhead.py"
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/refund_desk_bench"
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) > 1 else values[0]


def with_database_suffix(url: str, suffix: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path}_{suffix}"))


# --- The peer's database ----------------------------------------------------------------------


class PeerDatabase:
    """A database made by the desk's migrations and seed_demo, for the peer to read."""

    def __init__(self) -> None:
        os.environ["DATABASE_URL"] = with_database_suffix(POSTGRES_URL, "peer")
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        os.environ.setdefault("LOG_LEVEL", "WARNING")
        sys.path.insert(0, str(BASE_DIR))
        import django

        django.setup()
        self.name: str | None = None
        self.url = ""

    def create(self) -> "PeerDatabase":
        from django.db import connection, connections

        from desk.demo import seed_demo
        from tests.services import database_url_for_subprocess

        log("Creating the peer's database (migrate + seed_demo)...")
        self.name = connection.creation.create_test_db(
            verbosity=0, autoclobber=True, serialize=False
        )
        seed_demo()
        self.url = database_url_for_subprocess()
        connections.close_all()
        return self

    def drop(self) -> None:
        if self.name is None:
            return
        from django.db import connection, connections

        connections.close_all()
        connection.creation.destroy_test_db(self.name, verbosity=0)
        log(f"Dropped {self.name}.")
        self.name = None


# --- One round of each ------------------------------------------------------------------------


def run_json(command: list[str], env: dict[str, str]) -> object:
    done = subprocess.run(
        command, cwd=BASE_DIR, env=env, capture_output=True, text=True, check=False
    )
    output = done.stdout.strip()
    if done.returncode != 0 or not output:
        detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{Path(command[1]).name} failed: {detail}")
    try:
        return json.loads(output)
    except ValueError:  # JSON on its last line, after lines of its own
        return json.loads(output.splitlines()[-1])


def postgres_result(parsed: object) -> dict:
    """The PostgreSQL figures agent_overhead printed ({"postgresql": {...}}); a string there
    is its word for a database it could not measure."""
    result = parsed.get("postgresql") if isinstance(parsed, dict) else None
    if not isinstance(result, dict):
        raise RuntimeError(
            f"the desk's PostgreSQL round was not measured: {result or parsed!r:.300}"
        )
    return result


def desk_round(runs: int) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env["BENCH_RUNS"] = str(runs)
    # A database name of its own (test_refund_desk_bench_desk): agent_overhead run by hand
    # meanwhile must not find its throwaway database taken, nor take this one.
    env["BENCH_POSTGRES_URL"] = with_database_suffix(POSTGRES_URL, "desk")
    command = [sys.executable, str(DESK_BENCH), "--json", "--only", "postgresql", "--raw"]
    command += ["--stream", "off"]  # the peer does not stream either
    return postgres_result(run_json(command, env))


def side_round(database_url: str, runs: int, side: str) -> dict:
    command = [str(PEER_PYTHON), *SIDES[side].script, "--database-url", database_url]
    result = run_json([*command, "--runs", str(runs)], {**os.environ})
    assert isinstance(result, dict)
    return result


# --- Putting the rounds together --------------------------------------------------------------


def pooled(rounds: list[dict]) -> dict:
    """All steps of all rounds when every round listed its timings; otherwise the median of
    the rounds' medians (and the worst round's p95), and it says so."""
    if all(r.get("timings_ms") for r in rounds):
        timings = [value for r in rounds for value in r["timings_ms"]]
        return {
            "median_ms": statistics.median(timings),
            "p95_ms": p95(timings),
            "steps": len(timings),
            "pooled": "all steps",
        }
    return {
        "median_ms": statistics.median(r["median_ms"] for r in rounds),
        "p95_ms": max(r["p95_ms"] for r in rounds),
        "steps": sum(r["steps"] for r in rounds),
        "pooled": "median of round medians, worst round p95",
    }


@dataclass(frozen=True)
class Side:
    """What is measured against the desk: its key in the JSON, the suffix of the desk's ratios
    to it (ratio_median<suffix>, ratio_p95<suffix>), its names, and the script that measures
    it (in the peer venv, on the peer's database)."""

    key: str
    suffix: str
    name: str
    label: str
    script: tuple[str, ...]
    tools: str = ""


def peer(tools: str, key: str, suffix: str) -> Side:
    script = (str(PEERS_DIR / "langgraph_step.py"), "--tools", tools)
    label = f"LangGraph + PostgresSaver, tools {tools}"
    return Side(key, suffix, f"peer (tools {tools})", label, script, tools)


# The peer's ways of running a step's two tool calls: at the same time (as the desk runs its
# quick lookups, and LangGraph's prebuilt ToolNode any calls), or one after the other.
PEER_TOOLS = {
    "together": peer("together", "peer", ""),
    "in-turn": peer("in-turn", "peer_in_turn", "_in_turn"),
}
# Measured like a peer, reported beside them: the step's unavoidable work done bare.
FLOOR = "floor"
SIDES = {
    **PEER_TOOLS,
    FLOOR: Side(
        "floor",
        "_floor",
        "floor",
        "floor (model call, 2 reads, 2 commits)",
        (str(PEERS_DIR / "floor_step.py"),),
    ),
}


def compare(rounds: int, runs: int, sides: list[str]) -> dict:
    """`sides`: what to measure against the desk (keys of SIDES)."""
    database = PeerDatabase().create()
    desk: list[dict] = []
    peers: dict[str, list[dict]] = {side: [] for side in sides}
    try:
        for index in range(rounds):
            started = time.monotonic()
            desk.append(desk_round(runs))
            log(
                f"  round {index + 1}/{rounds} desk: median {desk[-1]['median_ms']:.1f} ms "
                f"({time.monotonic() - started:.0f} s with its database)"
            )
            for side, results in peers.items():
                results.append(side_round(database.url, runs, side))
                log(
                    f"  round {index + 1}/{rounds} {SIDES[side].name}: median "
                    f"{results[-1]['median_ms']:.1f} ms"
                )
    finally:
        database.drop()
    desk_all = pooled(desk)
    result: dict = {
        "rounds": rounds,
        "runs_per_round": runs,
        "desk": {**desk_all, "round_medians_ms": [round(r["median_ms"], 2) for r in desk]},
    }
    for side, results in peers.items():
        side_all = pooled(results)
        about = SIDES[side]
        result[about.key] = {
            **side_all,
            "round_medians_ms": [round(r["median_ms"], 2) for r in results],
            **({"tools": about.tools} if about.tools else {}),
        }
        suffix = about.suffix
        result[f"ratio_median{suffix}"] = desk_all["median_ms"] / side_all["median_ms"]
        result[f"ratio_p95{suffix}"] = desk_all["p95_ms"] / side_all["p95_ms"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each (default 5)")
    parser.add_argument("--runs", type=int, default=20, help="runs of 3 steps per round")
    parser.add_argument(
        "--peer-tools",
        choices=(*PEER_TOOLS, "both"),
        default="together",
        help="the peer's two tool calls at the same time (default), one after the other, or "
        "both peers in every round",
    )
    parser.add_argument(
        "--no-floor", action="store_true", help="do not measure the floor (floor_step.py)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    peer_tools = list(PEER_TOOLS) if args.peer_tools == "both" else [args.peer_tools]
    sides = peer_tools if args.no_floor else [*peer_tools, FLOOR]
    if not PEER_PYTHON.exists():
        sys.exit(f"No peer venv at {PEER_PYTHON.parent.parent}: see bench/peers/README.md.")
    log(
        f"Desk step vs LangGraph + PostgresSaver (sync), {args.rounds} interleaved rounds "
        f"of {args.runs} runs x 3 steps each"
    )
    result = compare(args.rounds, args.runs, sides)
    if args.json:
        print(json.dumps(result))
        return
    print(f"{'':<44}{'steps':>7}{'median ms':>11}{'p95 ms':>9}")
    rows = [
        ("desk (agent.runtime.run_step.advance)", "desk"),
        *((SIDES[s].label, SIDES[s].key) for s in sides),
    ]
    for label, key in rows:
        side = result[key]
        print(f"{label:<44}{side['steps']:>7}{side['median_ms']:>11.2f}{side['p95_ms']:>9.2f}")
    for side in sides:
        suffix = SIDES[side].suffix
        print(
            f"desk / {SIDES[side].name}: median {result[f'ratio_median{suffix}']:.2f}x, "
            f"p95 {result[f'ratio_p95{suffix}']:.2f}x"
        )
    if FLOOR in sides:
        floor_ms = result["floor"]["median_ms"]
        for tools in peer_tools:
            peer_ms = result[PEER_TOOLS[tools].key]["median_ms"]
            print(f"peer (tools {tools}) / floor: median {peer_ms / floor_ms:.2f}x")
    print(f"({result['desk']['pooled']}; one interleaved run on this machine)")


if __name__ == "__main__":
    main()
