"""Each node of the loop on its own, against an in-memory journal: what it records and what it returns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from app.governance.policy import ENGINE_ERROR_RULE_ID, HASH_UNAVAILABLE, Decision, PolicySet
from app.graph.nodes.context_nodes import assemble_context, validate_prompt
from app.graph.nodes.execute_tools import execute_tools
from app.graph.nodes.ingest import ingest_result, loop_limit_handler
from app.graph.nodes.llm import call_llm, parse_response
from app.graph.state import HumanDecision, TurnState
from app.providers.base import ChatMessage, ModelRequest, ProviderError, ProviderEvent, ToolCall
from app.runtime.port.journal import ModelUsage
from app.tools.base import ToolResult
from app.tools.ledger_keys import idempotency_key
from tests.graph.memory import MemoryJournal, node_runtime, rules

ADD = ToolCall(id="call_0_0", name="calculator", arguments={"expression": "2+2"})
MUL = ToolCall(id="call_0_1", name="calculator", arguments={"expression": "3*3"})
GATE_CALCULATOR = {"id": "ask", "point": "tool", "tool": "calculator", "verdict": "requires_approval", "reason": "r"}


def state(**values: Any) -> TurnState:
    base: dict[str, Any] = {"input": "hi", "max_loops": 3, "max_output_tokens": 100, "loop_count": 0}
    return TurnState(**{**base, **values})  # type: ignore[typeddict-item]


def key(journal: MemoryJournal, call: ToolCall) -> str:
    ident = journal.ident
    return idempotency_key(str(ident.session_id), str(ident.turn_id), call.id)


# --- traced ------------------------------------------------------------------------------------------


async def test_a_node_is_framed_by_node_started_and_node_ended_with_its_loop() -> None:
    journal = MemoryJournal()
    await loop_limit_handler(state(loop_count=2), node_runtime(journal))
    assert [(e.type, e.node, e.loop) for e in journal.events] == [
        ("node.started", "loop_limit_handler", 2),
        ("node.ended", "loop_limit_handler", 2),
    ]


# --- assemble_context / validate_prompt ---------------------------------------------------------------


async def test_assemble_context_puts_the_system_prompt_before_history_and_this_runs_messages() -> None:
    journal = MemoryJournal()
    history = [ChatMessage(role="user", content="hi")]
    reply = ChatMessage(role="assistant", content="calling", tool_calls=(ADD,))
    update = await assemble_context(state(history=history, new_messages=[reply]), node_runtime(journal))
    assert update == {"system": "be brief", "prompt": [*history, reply]}


async def test_validate_prompt_records_an_allow_receipt_for_the_first_loop() -> None:
    journal = MemoryJournal()
    assert await validate_prompt(state(), node_runtime(journal)) == {}
    [(decision, tool_call_id, _)] = journal.receipts
    assert (decision.point, decision.verdict, tool_call_id) == ("pre_llm", "allow", None)


async def test_validate_prompt_fails_the_turn_on_a_deny() -> None:
    journal = MemoryJournal()
    policy = rules({"id": "no-pw", "point": "pre_llm", "input_regex": "password", "verdict": "deny", "reason": "pw"})
    update = await validate_prompt(state(input="my password"), node_runtime(journal, policy=policy))
    assert update == {"status": "failed", "error": {"code": "policy_denied", "message": "pw"}}
    assert [d.verdict for d, _, _ in journal.receipts] == ["deny"]


async def test_validate_prompt_judges_the_input_once_per_turn() -> None:
    journal = MemoryJournal()
    assert await validate_prompt(state(loop_count=1), node_runtime(journal)) == {}
    assert await validate_prompt(state(resume=True), node_runtime(journal)) == {}
    assert journal.receipts == []


# --- call_llm / parse_response ------------------------------------------------------------------------


async def test_call_llm_streams_deltas_and_records_the_reply_with_its_usage() -> None:
    journal = MemoryJournal()
    runtime = node_runtime(journal, script=[{"text": "two plus two", "tool_calls": [{"name": "calculator"}]}])
    update = await call_llm(state(system="s", prompt=[ChatMessage(role="user", content="hi")]), runtime)
    deltas = "".join(e.text for e in journal.of_type("message.delta"))
    [completed] = journal.of_type("message.completed")
    [usage] = journal.of_type("usage")
    assert deltas == completed.text == "two plus two"
    assert completed.stop_reason == "tool_use"
    [reply] = journal.messages
    assert (reply.role, reply.content) == ("assistant", "two plus two")
    assert reply.tool_calls == tuple(update["pending"])
    assert journal.usage[0].model == "scripted-1"
    assert (journal.usage[0].input_tokens, journal.usage[0].output_tokens) == (usage.input_tokens, usage.output_tokens)
    assert update["output_tokens"] == usage.output_tokens == 4
    assert update["model_calls"] == 1
    assert update["new_messages"] == [reply]


class FailingProvider:
    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        raise ProviderError("provider_unavailable", "down")
        yield  # pragma: no cover


async def test_call_llm_turns_a_provider_error_into_a_failed_update_that_still_counts_the_prompt() -> None:
    journal = MemoryJournal()
    update = await call_llm(state(prompt=[], system="be brief"), node_runtime(journal, provider=FailingProvider()))
    assert update == {
        "status": "failed", "error": {"code": "provider_unavailable", "message": "down"},
        "input_tokens": 2, "output_tokens": 0,
    }  # fmt: skip
    assert journal.messages == []
    assert journal.usage == []
    assert journal.unanswered == [ModelUsage("scripted-1", 2, 0)]


async def test_parse_response_announces_each_requested_call() -> None:
    journal = MemoryJournal()
    assert await parse_response(state(pending=[ADD, MUL]), node_runtime(journal)) == {}
    requested = journal.of_type("tool_call.requested")
    assert [(e.tool_call_id, e.name, e.arguments) for e in requested] == [
        (c.id, c.name, c.arguments) for c in (ADD, MUL)
    ]


async def test_parse_response_without_calls_makes_the_text_the_final_output() -> None:
    journal = MemoryJournal()
    assert await parse_response(state(last_text="done"), node_runtime(journal)) == {"final_output": "done"}


# --- execute_tools ------------------------------------------------------------------------------------


async def test_an_allowed_call_is_judged_then_dispatched_then_ledgered() -> None:
    journal = MemoryJournal()
    update = await execute_tools(state(pending=[ADD]), node_runtime(journal))
    assert update == {"results": {ADD.id: ToolResult("4")}}
    assert [(d.verdict, call_id) for d, call_id, _ in journal.receipts] == [("allow", ADD.id)]
    assert journal.dispatches == [(key(journal, ADD), 0, ADD)]
    assert journal.ledger == {key(journal, ADD): ToolResult("4")}
    [completed] = journal.of_type("tool_call.completed")
    assert (completed.tool_call_id, completed.result, completed.is_error) == (ADD.id, "4", False)


def counting_reads(runtime: Any) -> list[str]:
    """The points the node asks the policy set for, in order."""
    reads: list[str] = []
    judged_by = runtime.context.governance.current

    async def counted(point: Any) -> PolicySet | Decision:
        reads.append(point)
        return await judged_by(point)

    runtime.context.governance.current = counted
    return reads


async def test_a_batch_reads_the_policy_set_once_for_all_its_calls() -> None:
    """The tenant's rules are read per batch, not per call: three calls, one read, three receipts."""
    journal = MemoryJournal()
    runtime = node_runtime(journal)
    reads = counting_reads(runtime)
    third = ToolCall(id="call_0_2", name="calculator", arguments={"expression": "1+1"})
    update = await execute_tools(state(pending=[ADD, MUL, third]), runtime)
    assert update == {"results": {ADD.id: ToolResult("4"), MUL.id: ToolResult("9"), third.id: ToolResult("2")}}
    assert reads == ["tool"]
    assert [call_id for _, call_id, _ in journal.receipts] == [ADD.id, MUL.id, third.id]


async def test_a_batch_whose_calls_all_have_results_reads_no_policy() -> None:
    journal = MemoryJournal()
    runtime = node_runtime(journal)
    reads = counting_reads(runtime)
    update = await execute_tools(state(pending=[ADD], results={ADD.id: ToolResult("4")}), runtime)
    assert update == {"results": {ADD.id: ToolResult("4")}}
    assert reads == []
    assert journal.receipts == []


async def test_a_call_already_in_the_ledger_is_not_run_again_by_a_run_that_picks_up_stored_work() -> None:
    journal = MemoryJournal()
    journal.ledger[key(journal, ADD)] = ToolResult("stored")
    update = await execute_tools(state(pending=[ADD]), node_runtime(journal, restored=True))
    assert update["results"][ADD.id] == ToolResult("stored")
    assert journal.ledger_reads == [key(journal, ADD)]
    assert journal.dispatches == []


async def test_a_fresh_run_judges_and_runs_its_calls_without_reading_the_ledger() -> None:
    """Its calls' ids are its own and the key names the turn: nothing stored can be theirs."""
    journal = MemoryJournal()
    update = await execute_tools(state(pending=[ADD]), node_runtime(journal))
    assert update["results"][ADD.id] == ToolResult("4")
    assert journal.ledger_reads == []
    assert [(d.verdict, call_id) for d, call_id, _ in journal.receipts] == [("allow", ADD.id)]
    assert journal.dispatches == [(key(journal, ADD), 0, ADD)]


async def test_a_denied_call_is_never_dispatched_and_gets_an_error_result() -> None:
    journal = MemoryJournal()
    policy = rules({"id": "no-calc", "point": "tool", "tool": "calculator", "verdict": "deny", "reason": "no"})
    update = await execute_tools(state(pending=[ADD]), node_runtime(journal, policy=policy))
    assert update["results"][ADD.id] == ToolResult("denied by policy: no", is_error=True)
    assert journal.dispatches == []
    assert [d.verdict for d, _, _ in journal.receipts] == ["deny"]
    assert journal.ledger[key(journal, ADD)].is_error


async def test_a_blacklisted_call_is_denied_even_when_the_ledger_holds_it() -> None:
    journal = MemoryJournal()
    journal.ledger[key(journal, ADD)] = ToolResult("stored")
    policy = PolicySet(tool_blacklist=("calc*",))
    await execute_tools(state(pending=[ADD]), node_runtime(journal, policy=policy))
    assert [d.verdict for d, _, _ in journal.receipts] == ["deny"]
    assert journal.dispatches == []


async def test_an_unreadable_policy_fails_closed() -> None:
    journal = MemoryJournal()
    unreadable = Decision("tool", "deny", ENGINE_ERROR_RULE_ID, "policy engine error: OSError", HASH_UNAVAILABLE)
    update = await execute_tools(state(pending=[ADD]), node_runtime(journal, policy=unreadable))
    assert update["results"][ADD.id].is_error
    assert journal.dispatches == []


async def test_a_gated_call_interrupts_the_batch_and_requests_every_gated_approval() -> None:
    journal = MemoryJournal()
    update = await execute_tools(state(pending=[ADD, MUL]), node_runtime(journal, policy=rules(GATE_CALCULATOR)))
    assert update == {"results": {}, "status": "interrupted"}
    assert [(r.call, r.loop, r.decision.verdict) for r in journal.approvals.values()] == [
        (ADD, 0, "requires_approval"),
        (MUL, 0, "requires_approval"),
    ]
    assert journal.dispatches == []
    assert journal.ledger == {}


async def test_a_human_approval_runs_the_call_with_the_edited_arguments() -> None:
    journal = MemoryJournal()
    human: HumanDecision = {"approval_id": "a", "decision": "approve", "reason": None, "arguments": {"expression": "5"}}
    runtime = node_runtime(journal, policy=rules(GATE_CALCULATOR))
    update = await execute_tools(state(pending=[ADD], decisions={ADD.id: human}), runtime)
    assert update["results"][ADD.id] == ToolResult("5")
    assert journal.dispatches[0][2].arguments == {"expression": "5"}


async def test_a_human_denial_is_an_error_result_without_dispatch() -> None:
    journal = MemoryJournal()
    human: HumanDecision = {"approval_id": "a", "decision": "deny", "reason": "not now", "arguments": None}
    runtime = node_runtime(journal, policy=rules(GATE_CALCULATOR))
    update = await execute_tools(state(pending=[ADD], decisions={ADD.id: human}), runtime)
    assert update["results"][ADD.id] == ToolResult("denied by a human: not now", is_error=True)
    assert journal.dispatches == []


# --- ingest_result / loop_limit_handler ---------------------------------------------------------------


async def test_ingest_result_records_a_tool_message_per_call_and_closes_the_loop() -> None:
    journal = MemoryJournal()
    results = {ADD.id: ToolResult("4"), MUL.id: ToolResult("boom", is_error=True)}
    update = await ingest_result(state(pending=[ADD, MUL], results=results, loop_count=1), node_runtime(journal))
    assert [(m.role, m.tool_call_id, m.content, m.is_error) for m in journal.messages] == [
        ("tool", ADD.id, "4", False),
        ("tool", MUL.id, "boom", True),
    ]
    assert (update["loop_count"], update["pending"], update.get("status")) == (2, [], None)
    assert update["new_messages"] == journal.messages


async def test_ingest_result_without_calls_completes_the_turn() -> None:
    update = await ingest_result(state(), node_runtime(MemoryJournal()))
    assert update["status"] == "completed"


async def test_loop_limit_handler_tells_a_spent_budget_from_a_loop_limit() -> None:
    journal = MemoryJournal()
    spent = await loop_limit_handler(state(output_tokens=100, last_text="partial"), node_runtime(journal))
    looped = await loop_limit_handler(state(output_tokens=5, last_text="partial"), node_runtime(journal))
    assert spent == {
        "status": "budget_exceeded",
        "final_output": "partial",
        "error": {
            "code": "budget_exceeded",
            "message": "the turn spent 100 of its 100 output tokens",
            "spent": {"input_tokens": 0, "output_tokens": 100, "loops": 0},
        },
    }
    assert looped == {"status": "loop_limit", "final_output": "partial"}
