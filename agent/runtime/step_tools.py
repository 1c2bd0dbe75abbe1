"""The step's tool calls (DESIGN §7): run in order, quick lookups next to each other at the
same time, each result saved before the next tool starts, the cancel flag checked before every
tool, and the run handed to the next step once all results are saved.

Apart from the model call: a step whose model already answered in a step that died runs only
this part (run_step.Step.perform).
"""

import json

from agent import services
from agent.errors import error_in_words
from agent.executor.calls import Requested, ToolRun, run_tool_calls
from agent.models import AgentMessage
from agent.runtime import handover
from agent.runtime.calls import approval_details, describe_call, describe_result, together
from agent.runtime.prompts import customer_text_in_result
from agent.runtime.step_base import LeaseLost, StepKind, StepOutcome, new_lease_owner
from agent.runtime.step_endings import StepEndings
from agent.services import StepInterrupted, StepWrite
from agent.tools.registry import ToolKind, get_tool
from agent.untrusted import looks_like_instructions


class StepTools(StepEndings):
    """Running a reply's tool calls and saving their results."""

    @staticmethod
    def started_event(call: dict) -> dict:
        return {
            "tool_call_id": call["id"],
            "name": call["function"]["name"],
            "summary": describe_call(call),
        }

    def execute_tools(
        self,
        calls: list[tuple[int, dict]],
        *,
        announced: bool = False,
        write: StepWrite | None = None,
    ) -> StepOutcome:
        """Run every (position in the reply, call), one tool message per call id: in order,
        except that quick lookups (Tool.quick) next to each other run at the same time.
        `announced`: their tool_call.started events are saved already. Before a tool starts,
        the results before it are saved, in a write that also checks the cancel flag, unless
        they and it are quick lookups: then the flag is read. Once it is set, the remaining
        calls are logged as cancelled without running."""
        write = write if write is not None else StepWrite()
        unsaved_are_quick = True
        for batch in together(calls):
            tool = get_tool(batch[0][1]["function"]["name"])
            writes = tool is not None and tool.kind == ToolKind.WRITE
            quick = tool is not None and tool.quick
            if not self.checks.is_cancelled and (write or writes):
                if quick and unsaved_are_quick:
                    self.check_cancel()
                else:
                    # A write tool gets a durable check right before it; results of read
                    # tools only need to outlive the worker until the step's last write.
                    write = self.save_before_tool(write, durable=writes)
                    unsaved_are_quick = True
            unsaved_are_quick = unsaved_are_quick and quick
            if not announced and not self.checks.is_cancelled:
                for _, call in batch:
                    write.event("tool_call.started", self.started_event(call))
            runs = run_tool_calls(
                self.ctx,
                [
                    Requested(
                        call["id"],
                        call["function"]["name"],
                        call["function"]["arguments"],
                        position,
                    )
                    for position, call in batch
                ],
                checks=self.checks,
                wait=self.heartbeat_wait,
            )
            for (_, call), ran in zip(batch, runs, strict=True):
                self.add_result(write, call, ran)
        if self.checks.is_cancelled:
            return self.stop_cancelled(write)
        next_owner = new_lease_owner()
        try:
            self.save(write, hand_over_to=next_owner)
        except StepInterrupted:
            return self.stop_cancelled(write)
        handover.keep(
            run_id=self.run.pk,
            owner=next_owner,
            version=self.run.version,
            carried=handover.Carried(transcript=self.transcript, prior=self.checks.prior),
        )
        return StepOutcome(StepKind.CONTINUE, version=self.run.version, owner=next_owner)

    def check_cancel(self) -> None:
        """Read the cancel flag where no write comes before the next tool (DESIGN §7: it is
        checked before every tool call). Raises LeaseLost when the run is gone."""
        cancelled = services.run_cancel_flag(run=self.run, owner=self.owner)
        if cancelled is None:
            raise LeaseLost
        self.checks.is_cancelled = cancelled

    def save_before_tool(self, write: StepWrite, *, durable: bool) -> StepWrite:
        """Save what the step has before the next tool starts. Returns what it carries on
        with: a new write, or `write` itself when a cancel stopped the save (stop_cancelled
        saves it with the calls logged as cancelled)."""
        try:
            self.save(write, durable=durable)
        except StepInterrupted:
            self.checks.is_cancelled = True
            return write
        return StepWrite()

    def add_result(self, write: StepWrite, call: dict, ran: ToolRun) -> None:
        """The call's result, log row and events, for the step's next write."""
        result = ran.result
        if ran.row is not None:
            write.logs.append(ran.row)
        write.messages.append(
            self.message(
                AgentMessage.Role.TOOL,
                tool_call_id=call["id"],
                content=json.dumps(result, ensure_ascii=False, default=str),
            )
        )
        if self.checks.is_cancelled:
            return
        write.event(
            "tool_call.completed",
            {
                "tool_call_id": call["id"],
                "name": call["function"]["name"],
                "ok": bool(result.get("ok", True)),
                "error_code": (result.get("error") or {}).get("code", ""),
                # What the panel shows the desk user: the error in words, never its code.
                "error_words": ""
                if result.get("ok", True)
                else error_in_words(result.get("error") or {}),
                "summary": describe_result(call, result),
            },
        )
        approval = approval_details(result) if call["function"]["name"] == "create_refund" else None
        if approval:
            write.event("approval.required", approval)
        suspicious = any(looks_like_instructions(text) for text in customer_text_in_result(result))
        if suspicious and not self.run.untrusted_instructions:
            self.flags["untrusted_instructions"] = True
            self.run.untrusted_instructions = True
