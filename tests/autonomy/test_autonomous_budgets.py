"""An autonomous turn's PLAN, steps and closing summary under one budget and the tenant's quota (PostgreSQL, SQLite).

The scripted model counts a token a word (tests/usage/test_budgets_and_quota.py): output counts are
exact, prompts grow with the plan's context, so the limits below leave room for prompts to change.
"""

from __future__ import annotations

from datetime import UTC, datetime

from app.governance.period import period_bounds
from app.models import QuotaLedger
from app.models.base import utcnow
from tests.autonomy.support import autonomous_turn, echo, of, plan
from tests.sse import Frame
from tests.usage.conftest import Api
from tests.usage.support import put_limits

LONG_REPLY = " ".join(f"word{i}" for i in range(300))


def _kinds(frames: list[Frame]) -> list[str]:
    return [e["kind"] for e in of(frames, "usage")]


async def test_a_step_that_spends_the_total_budget_ends_the_turn_there_without_a_summary(
    api: Api, alice: dict[str, str]
) -> None:
    # the plan and step 1 cost about 150 tokens, step 2's tool round about 95: its long reply is cut at 400
    frames = await autonomous_turn(
        api.client, alice,
        plan("first", "second", "third"),
        echo("one"), {"text": "step one done"},
        echo("two"), {"text": LONG_REPLY},
        echo("three"), {"text": "step three done"},
        {"text": "never summarised"},
        limits={"max_total_tokens": 400},
    )  # fmt: skip
    assert [e["todo_id"] for e in of(frames, "plan.step.started")] == ["todo_1", "todo_2"]
    completed = of(frames, "plan.step.completed")
    assert [(e["todo_id"], e["status"]) for e in completed] == [("todo_1", "done"), ("todo_2", "failed")]
    assert LONG_REPLY.startswith(completed[1]["output"].strip())
    assert [e["result"] for e in of(frames, "tool_call.completed")] == ["one", "two"]
    assert _kinds(frames) == ["plan", "model", "model", "model", "model"]
    assert of(frames, "message.completed")[-1]["stop_reason"] == "max_tokens"
    ended = frames[-1].data
    assert (ended["status"], ended["error"]["code"]) == ("budget_exceeded", "budget_exceeded")
    assert ended["final_output"] == "first:\nstep one done"
    spent = ended["error"]["spent"]
    assert spent["input_tokens"] + spent["output_tokens"] == 400
    assert {k: spent[k] for k in ("input_tokens", "output_tokens")} == ended["usage"]


async def test_a_budget_spent_by_the_last_step_makes_no_summary_call(api: Api, alice: dict[str, str]) -> None:
    the_plan = plan("only")
    plan_words = len(the_plan["text"].split())
    frames = await autonomous_turn(
        api.client, alice, the_plan, {"text": "did it all"}, {"text": "never summarised"},
        limits={"max_output_tokens": plan_words + 3},
    )  # fmt: skip
    assert [(e["todo_id"], e["status"]) for e in of(frames, "plan.step.completed")] == [("todo_1", "done")]
    assert [e["text"] for e in of(frames, "message.completed")] == [the_plan["text"], "did it all"]
    assert _kinds(frames) == ["plan", "model"]
    ended = frames[-1].data
    assert (ended["status"], ended["error"]["code"]) == ("budget_exceeded", "budget_exceeded")
    assert ended["error"]["spent"]["output_tokens"] == plan_words + 3
    assert ended["final_output"] == "only:\ndid it all"


async def test_a_budget_that_cannot_pay_for_the_plan_call_ends_the_turn_before_it(
    api: Api, alice: dict[str, str]
) -> None:
    frames = await autonomous_turn(api.client, alice, plan("only"), limits={"max_total_tokens": 5})
    assert of(frames, "message.completed") == []
    assert of(frames, "plan.created") == []
    ended = frames[-1].data
    assert (ended["status"], ended["error"]["code"]) == ("budget_exceeded", "budget_exceeded")
    assert ended["final_output"] is None
    assert ended["error"]["spent"] == {"input_tokens": 0, "output_tokens": 0, "loops": 0}


async def _reserve_all(api: Api, tenant: str, tokens: int) -> None:
    """What a call of another replica holds: the whole of the period's quota reserved, nothing used yet."""
    start = period_bounds("day", datetime.now(UTC))[0]
    row = {"tenant_id": tenant, "period_start": start, "used": 0, "reserved": tokens, "updated_at": utcnow()}
    async with api.app.state.container.engine.begin() as conn:
        await conn.execute(QuotaLedger.__table__.insert().values(row))


async def test_a_quota_held_by_other_calls_refuses_the_plan_call_like_a_loop_call(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 100})
    await _reserve_all(api, tenant, 100)
    autonomous = await autonomous_turn(api.client, alice, plan("only"), {"text": "never"})
    interactive = await autonomous_turn(api.client, alice, {"text": "never"}, mode="interactive")
    for frames in (autonomous, interactive):
        assert of(frames, "message.completed") == []
        ended = frames[-1].data
        assert (ended["status"], ended["error"]["code"]) == ("budget_exceeded", "quota_exceeded")
    assert autonomous[-1].data["error"] == interactive[-1].data["error"]
    assert of(autonomous, "plan.created") == []


async def test_the_plan_and_summary_calls_reserve_and_settle_the_quota(
    api: Api, admin: dict[str, str], alice: dict[str, str], tenant: str
) -> None:
    await put_limits(api.client, admin, token_quota={"period": "day", "tokens": 100_000})
    frames = await autonomous_turn(api.client, alice, plan("only"), {"text": "did it"}, {"text": "summary"})
    ended = frames[-1].data
    assert (ended["status"], ended["final_output"]) == ("completed", "summary")
    assert _kinds(frames) == ["plan", "model", "plan"]
    start = period_bounds("day", datetime.now(UTC))[0]
    async with api.app.state.container.engine.connect() as conn:
        row = (
            await conn.execute(
                QuotaLedger.__table__.select().where(QuotaLedger.tenant_id == tenant, QuotaLedger.period_start == start)
            )
        ).one()
    assert (row.used, row.reserved) == (ended["usage"]["input_tokens"] + ended["usage"]["output_tokens"], 0)
