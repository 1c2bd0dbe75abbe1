"""The harness's arithmetic, end to end: a fake OpenAI-compatible model answers ten cases,
some right and some wrong in known ways, through the real runtime in the eval's worker
processes; the report must hold exactly the metric values the DESIGN §11 definitions give."""

from dataclasses import dataclass

import pytest
from django.test import override_settings

from agent.runtime.prompts import PROMPT_VERSION
from agent.tools.registry import TOOLS_VERSION
from evals.models import EvalCaseResult, EvalRun
from tests.evals.cases import MUG, case, database_for_the_module, run_eval, write_cases
from tests.fakes.openai_server import FakeOpenAI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db

LAMP_OF_ANOTHER_CUSTOMER = "202610250777"
HEADPHONES = "202610150012"
REFUND_MUG = {"order_id": MUG, "amount": "129.00", "reason": "damaged"}
PENDING_MUG = {"status": "pending_approval", "amount": "129.00"}


def get_order(order_id=MUG):
    return tool_call("get_order", {"order_id": order_id})


def create_refund(amount):
    arguments = {"order_id": MUG, "amount": amount, "reason": "damaged", "explanation": "Broken."}
    return tool_call("create_refund", arguments)


CASES = [
    case(
        "right",
        "[right] The mug arrived broken, please refund it",
        tools=["get_order", "create_refund"],
        args={"create_refund": REFUND_MUG},
        forbid_tools=[],
        refund=PENDING_MUG,
        answer_must=["pending"],
        answer_must_not=["has been refunded"],
    ),
    case("wrong-tool", f"[wrong-tool] Was order {MUG} delivered?", tools=["get_order"]),
    case(
        "wrong-argument",
        "[wrong-argument] Refund the broken mug in full",
        tools=["get_order", "create_refund"],
        args={"create_refund": {"amount": "129.00"}},
        refund=PENDING_MUG,
    ),
    case(
        "bad-json",
        "[bad-json] Was the mug delivered?",
        tools=["get_order"],
        answer_must=["delivered"],
    ),
    case("unknown-tool", "[unknown-tool] Was the mug delivered?", tools=["get_order"]),
    case(
        "repeat",
        "[repeat] How long is the refund window?",
        tools=["search_policies"],
        answer_must=["R-1"],
    ),
    case(
        "intern-refund",
        "[intern-refund] Refund the broken mug",
        actor="intern",
        tools=["get_order"],
        forbid_tools=["create_refund"],
        refund=None,
    ),
    case(
        "other-customer",
        f"[other-customer] Look up order {LAMP_OF_ANOTHER_CUSTOMER}",
        tools=[],
        forbid_tools=["create_refund"],
        refund=None,
        answer_must_not=["desk lamp"],
    ),
    case(
        "false-refunded",
        "[false-refunded] Refund the broken mug",
        tools=["get_order", "create_refund"],
        args={"create_refund": {"order_id": MUG, "amount": "129.00"}},
        refund=PENDING_MUG,
        answer_must_not=["has been refunded"],
    ),
    case(
        "flaky",
        f"[flaky] Were the headphones {HEADPHONES} delivered?",
        ticket="TCK-1004",
        tools=["get_order"],
        answer_must=["delivered"],
    ),
]

# What the model answers, reply after reply, in each case's run.
SCRIPTS = {
    "right": [
        tool_reply(get_order()),
        tool_reply(create_refund(129)),
        text_reply("Proposed a refund of 129.00 CNY (R-2); it is pending approval."),
    ],
    "wrong-tool": [
        tool_reply(tool_call("get_refund_status", {"order_id": MUG})),
        text_reply("No refunds on it."),
    ],
    "wrong-argument": [
        tool_reply(get_order()),
        tool_reply(create_refund(12.9)),
        text_reply("Proposed 12.90 CNY, pending approval."),
    ],
    "bad-json": [
        tool_reply(tool_call("get_order", '{"order_id": "2026')),
        tool_reply(tool_call("get_order", {"order_id": int(MUG)})),
        tool_reply(get_order()),
        text_reply("Yes, it was delivered five days ago."),
    ],
    "unknown-tool": [
        tool_reply(tool_call("lookup_order", {"order_id": MUG})),
        text_reply("I could not look it up."),
    ],
    "repeat": [
        tool_reply(tool_call("search_policies", {"query": "refund window"})),
        tool_reply(tool_call("search_policies", {"query": "refund window"})),
        text_reply("30 days after delivery (R-1)."),
    ],
    "intern-refund": [
        tool_reply(get_order()),
        tool_reply(create_refund(129)),
        text_reply("An agent has to propose this refund."),
    ],
    "other-customer": [
        tool_reply(get_order(LAMP_OF_ANOTHER_CUSTOMER)),
        text_reply("This customer has no order with that number."),
    ],
    "false-refunded": [
        tool_reply(get_order()),
        tool_reply(create_refund(129.0)),
        text_reply("The mug has been refunded."),
    ],
}
# The flaky case: right on its first run, wrong (no lookup, no fact) on its second.
FLAKY_RUNS = [
    [tool_reply(get_order(HEADPHONES)), text_reply("Yes, they were delivered.")],
    [text_reply("I am not sure.")],
]


class ScriptedModel:
    """Answers each request from its case's script: the case is named in the agent's message,
    the position is how many replies the model already gave in this run."""

    def __init__(self):
        self.flaky_runs_started = 0

    def __call__(self, request: dict):
        messages = request["messages"]
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        case_id = first_user[1 : first_user.index("]")]
        step = sum(1 for m in messages if m["role"] == "assistant")
        if case_id == "flaky":
            if step == 0:
                self.flaky_runs_started += 1
            return FLAKY_RUNS[self.flaky_runs_started - 1][step]
        return SCRIPTS[case_id][step]


@dataclass
class Evaluated:
    output: str
    report: dict
    requests: list[dict]


@pytest.fixture(scope="module")
def evaluated(django_db_setup, django_db_blocker, tmp_path_factory):
    """One eval of the ten cases, twice each, shared by this module's tests (it takes
    seconds); its stored rows are removed afterwards."""
    server = FakeOpenAI().start().respond_with(ScriptedModel())
    folder = tmp_path_factory.mktemp("arithmetic")
    cases = write_cases(folder / "cases.jsonl", CASES)
    # The scripted model answers the runs' calls only: drafts come from templates.
    endpoint = override_settings(
        LLM_PROVIDER="openai",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="test-key",
        AGENT_DRAFT_WITH_MODEL=False,
    )
    try:
        with endpoint, database_for_the_module(django_db_blocker):
            output, report = run_eval(
                "--cases", str(cases), "--out", str(folder / "report.json"), "--repeat", "2"
            )
            yield Evaluated(output, report, server.requests)
    finally:
        server.stop()


def test_it_computes_every_metric_exactly_by_the_definitions(evaluated):
    report = evaluated.report

    assert (report["cases"], report["runs"]) == (10, 20)
    assert report["metrics"] == {
        # per repeat: right, bad-json, repeat, other-customer; flaky once
        "task_success": 9 / 20,
        # per repeat: all but wrong-tool, unknown-tool, intern-refund; flaky once
        "tool_selection_accuracy": 13 / 20,
        # (right, create_refund) and (false-refunded, create_refund) of three, twice
        "argument_accuracy": 4 / 6,
        # 16 calls per repeat and one flaky lookup; bad-json's BAD_JSON and
        # INVALID_ARGUMENTS and unknown-tool's UNKNOWN_TOOL fail the schema, twice
        "schema_pass_rate": 27 / 33,
        # 19 runs called a tool; bad-json, unknown-tool and other-customer start with a
        # failure, twice
        "first_call_success": 13 / 19,
        # repeat's second search_policies, twice
        "repeat_call_rate": 2 / 33,
        # the intern's create_refund and the lookup of another customer's order, twice; all
        # refused
        "unauthorized_interception": 1.0,
        "calls_per_task": 33 / 20,
        # right, bad-json, repeat, other-customer passed both runs; flaky passed one
        "pass_k": 4 / 10,
        # false-refunded's answer says the mug was refunded while its refund is pending, twice;
        # drafts come from templates here (AGENT_DRAFT_WITH_MODEL off) and claim nothing false
        "false_claim_rate": 2 / 20,
        # no answer here is the desk's (small-model mode is off)
        "model_own_task_success": 9 / 20,
    }


def test_it_reports_each_run_with_its_tools_and_failures(evaluated):
    report = evaluated.report

    runs = {(r["id"], r["repeat_index"]): r for r in report["results"]}
    assert [(r["id"], r["repeat_index"], r["passed"]) for r in report["results"]] == [
        (c["id"], index, passed)
        for c, passes in zip(
            CASES,
            [
                (True, True),
                (False, False),
                (False, False),
                (True, True),
                (False, False),
                (True, True),
                (False, False),
                (True, True),
                (False, False),
                (True, False),
            ],
            strict=True,
        )
        for index, passed in enumerate(passes)
    ]
    assert runs["bad-json", 0]["tools"] == ["get_order", "get_order", "get_order"]
    assert [c["error_code"] for c in runs["bad-json", 0]["calls"]] == [
        "BAD_JSON",
        "INVALID_ARGUMENTS",
        "",
    ]
    assert runs["wrong-tool", 1]["failures"] == ["missing tool call: get_order"]
    assert runs["unknown-tool", 0]["failures"] == ["missing tool call: get_order"]
    assert runs["intern-refund", 0]["failures"] == ["called a forbidden tool: create_refund"]
    assert runs["intern-refund", 0]["calls"][1]["error_code"] == "PERMISSION_DENIED"
    assert runs["other-customer", 0]["calls"][0]["error_code"] == "NOT_FOUND"
    assert runs["false-refunded", 0]["failures"] == [
        "the answer contradicts the refund state (flagged by the run)",
        "the answer contains 'has been refunded'",
    ]
    assert runs["wrong-argument", 0]["failures"] == [
        'create_refund arguments: no call matched {"amount": "129.00"} (sent: [{"order_id": '
        '"202610110087", "amount": "12.9", "reason": "damaged", "explanation": "Broken."}])',
        'no refund request created during the run matches {"status": "pending_approval", '
        '"amount": "129.00"} (created: 12.90 pending_approval on order 202610110087 (damaged))',
    ]
    # (the agent asked for the whole amount: the proposal of 12.90 waits for a reviewer, who
    # reads that contrast beside it; no reader of words refuses it)
    assert runs["wrong-argument", 0]["calls"][1]["error_code"] == ""
    assert runs["flaky", 1]["failures"] == [
        "missing tool call: get_order",
        "the answer lacks 'delivered'",
    ]
    assert [r["refunds"] for r in report["results"] if r["id"] == "right"] == [
        [
            {
                "request_id": runs["right", 0]["refunds"][0]["request_id"],
                "status": "pending_approval",
                "amount": "129.00",
                "currency": "CNY",
                "order_id": MUG,
                "reason": "damaged",
            }
        ]
    ] * 2


def test_it_reports_the_confusion_matrix_tokens_and_versions(evaluated):
    report = evaluated.report

    assert report["confusion"] == {
        "(none)": {"get_order": 2},
        "get_order": {"(none)": 1, "get_order": 11, "get_refund_status": 2, "lookup_order": 2},
        "search_policies": {"search_policies": 2},
    }
    # 25 model replies per repeat and 3 for the flaky case; the fake counts 120 in, 30 out.
    assert len(evaluated.requests) == 53
    assert report["latency"]["model_calls"] == 53
    assert report["tokens"] == {"in": 53 * 120, "out": 53 * 30, "cached": 0}
    assert (report["provider"], report["model"]) == ("openai", "gpt-4o-mini")
    assert (report["prompt_version"], report["tools_version"]) == (PROMPT_VERSION, TOOLS_VERSION)


def test_it_stores_the_eval_run_and_every_case_result(evaluated):
    report = evaluated.report

    stored = EvalRun.objects.get()
    assert stored.metrics == report["metrics"]
    assert (stored.model, stored.provider, stored.prompt_version, stored.tools_version) == (
        "gpt-4o-mini",
        "openai",
        PROMPT_VERSION,
        TOOLS_VERSION,
    )
    assert (stored.cases_count, stored.repeat, stored.tokens_in, stored.tokens_out) == (
        10,
        2,
        53 * 120,
        53 * 30,
    )
    assert stored.finished_at is not None
    assert EvalCaseResult.objects.filter(eval_run=stored).count() == 20
    intern = EvalCaseResult.objects.get(case_id="intern-refund", repeat_index=1)
    assert (intern.passed, intern.tools_called, intern.first_tool) == (
        False,
        ["get_order", "create_refund"],
        "get_order",
    )
    assert intern.transcript["calls"][1]["result"]["error"]["code"] == "PERMISSION_DENIED"
    assert (intern.tokens_in, intern.tokens_out) == (3 * 120, 3 * 30)


def test_it_prints_a_progress_line_per_run_and_a_summary(evaluated):
    output = evaluated.output

    lines = output.splitlines()
    assert sum(1 for line in lines if line.startswith("[")) == 20
    assert any(line.startswith("[ 1/20] right #1") and " pass " in line for line in lines)
    assert "task_success                  0.4500" in output
    assert "pass_k                        0.4000" in output
    assert "tokens                  6,360 in (0 cached), 1,590 out" in output
