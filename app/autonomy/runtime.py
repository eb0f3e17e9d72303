"""The autonomous runtime: PLAN (the todos), PURSUE (the inner runtime's governed loop per todo), a closing summary.

It wraps another `TurnRuntime` (the LangGraph loop) behind the same port, so the engine launches,
cancels, settles and resumes an autonomous turn like any other. Every step runs the inner loop with
the turn's running totals (loops, tokens), so loop and budget limits count across the whole plan,
and its loop index goes on from the previous step's. A step's tool calls are told apart from every
earlier step's by their ids, unique in the session (app/providers/call_ids.py).

A run that goes on from the database (an approval's decision, or a continuation of a turn whose
replica was lost) rebuilds the plan from its `plan.*` events and the steps' conversation from the
stored messages (app/autonomy/conversation.py). The running step goes on through the inner
runtime's resume or continuation, never from its start, so its tool calls do not run twice; a
running step with nothing stored yet starts again; a plan that was never stored is made again; a
summary stored before the crash is the outcome.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from app.autonomy.conversation import StoredTurn, goal
from app.autonomy.journal import StepJournal
from app.autonomy.plan import PLAN_INSTRUCTION, Plan, PlanInvalid, Step, parse_plan
from app.autonomy.tools import PlanTools
from app.governance.budget import Budget, Spent, exceeded, spent_reason
from app.graph.governed_call import CallGovernance, Refused, Unanswered, governed_call
from app.providers.base import ChatMessage, ModelRequest, ModelResponse
from app.runtime.port.events import PlanCreated, PlanStepCompleted, PlanStepStarted, PlanTodo
from app.runtime.port.journal import Progress, TurnJournal, TurnRun, TurnRuntime, TurnServices
from app.structured.answer import Accepted, Rejected, judge_answer

SUMMARY_INSTRUCTION = "Every step of the plan has run. Write the closing summary of what was done for the user."
STEP_STATUS = {"completed": "done"}


@dataclasses.dataclass(slots=True)
class _Totals:
    loop_count: int
    input_tokens: int
    output_tokens: int
    calls: int
    last_text: str = ""

    def progress(self, **outcome: object) -> Progress:
        return Progress(
            loop_count=self.loop_count,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            last_text=self.last_text,
            **outcome,  # type: ignore[arg-type]
        )

    def spent(self) -> Spent:
        return Spent(self.input_tokens, self.output_tokens, self.loop_count)

    def add(self, input_tokens: int, output_tokens: int) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def went_on(self, progress: Progress, calls: int) -> None:
        """Take over where a step's inner run left the totals."""
        self.loop_count, self.input_tokens, self.output_tokens = (
            progress.loop_count, progress.input_tokens, progress.output_tokens
        )  # fmt: skip
        self.last_text, self.calls = progress.last_text, calls


class AutonomousRuntime:
    def __init__(self, inner: TurnRuntime) -> None:
        self.inner = inner

    def continues_at(self, run: TurnRun) -> int:
        """The inner loop's rounds the stored steps completed (app/autonomy/conversation.py `StoredTurn.loops`)."""
        return StoredTurn.of(run.history, Plan.of_events(run.plan_events)).loops

    async def run(self, run: TurnRun, services: TurnServices, journal: TurnJournal) -> AsyncIterator[Progress]:
        recording = StepJournal(journal)
        """Everything this run adds to the conversation: what every later prompt (and call index) goes on from."""
        plan = Plan.of_events(run.plan_events)
        stored = StoredTurn.of(run.history, plan)
        loops = self.continues_at(run) if run.continuing else run.loop_count
        totals = _Totals(loops, run.input_tokens, run.output_tokens, _calls(run.history))
        if not plan.steps:
            failure = await self._plan(run, stored.before, services, recording, totals, plan)
            if failure is not None:
                yield failure
                return
        yield totals.progress()
        services = dataclasses.replace(services, tools=PlanTools(services.tools, plan, journal, max(run.max_steps, 1)))
        going_on = plan.running() if stored.rest else None
        """The step this run goes on with from its stored messages (a decision's step, a continued one)."""
        if going_on is None and (lost := self._lost_end(run, plan, stored, totals)) is not None:
            yield lost
            return
        conversation = stored.conversation(plan, going_on, run.input)
        while (step := plan.running() or plan.next_pending()) is not None:
            if step.status == "pending":
                if (stop := self._limit(run, plan, totals)) is not None:
                    yield stop
                    return
                step.status = "running"
                journal.event(PlanStepStarted(todo_id=step.id, title=step.title))
            step_run = self._step_run(run, plan, step, [*conversation, *recording.messages], totals, step is going_on)
            if step is not going_on:
                recording.note(step_run.history[-1])
            progress = totals.progress()
            async for progress in self.inner.run(step_run, services, recording):
                yield dataclasses.replace(progress, status=None, final_output=None, error=None)
            totals.went_on(progress, _calls([*run.history, *recording.messages]))
            if progress.status == "interrupted":
                yield progress
                return
            step.output = progress.final_output or progress.last_text
            step.status = STEP_STATUS.get(progress.status or "", "failed")
            journal.event(
                PlanStepCompleted(todo_id=step.id, title=step.title, status=step.status, output=step.output)  # type: ignore[arg-type]
            )
            if progress.status != "completed":
                yield dataclasses.replace(progress, final_output=plan.outputs() or progress.final_output)
                return
        yield await self._summary(run, services, recording, totals, plan)

    @staticmethod
    def _lost_end(run: TurnRun, plan: Plan, stored: StoredTurn, totals: _Totals) -> Progress | None:
        """The outcome of a turn that was stored but not settled before its replica was lost: the summary
        stored after the last step, or, after a step that failed, the limit that stopped it if one is
        spent, else `failed` `server_restarted` (the step's own error was not stored). None: go on."""
        if plan.running() is None and plan.next_pending() is None and stored.summary is not None:
            return totals.progress(status="completed", final_output=stored.summary)
        if not any(s.status == "failed" for s in plan.steps):
            return None
        if (over := _over_budget(run, plan, totals)) is not None:
            return over
        if totals.loop_count >= run.max_loops:
            return totals.progress(status="loop_limit", final_output=plan.outputs() or None)
        message = "the service restarted after a step of this turn failed"
        return totals.progress(status="failed", error={"code": "server_restarted", "message": message})

    @staticmethod
    def _limit(run: TurnRun, plan: Plan, totals: _Totals) -> Progress | None:
        """The outcome of a turn that may start no further step: `max_steps` reached, or its budget spent."""
        if sum(1 for s in plan.steps if s.status != "pending") >= max(run.max_steps, 1):
            return totals.progress(status="loop_limit", final_output=plan.outputs() or None)
        return _over_budget(run, plan, totals)

    async def _plan(
        self,
        run: TurnRun,
        conversation: list[ChatMessage],
        services: TurnServices,
        journal: TurnJournal,
        totals: _Totals,
        plan: Plan,
    ) -> Progress | None:
        """The PLAN call over the conversation up to the turn's input (retried once with the validation
        error); None once `plan.created` is out."""
        messages = [*conversation]
        for attempt in range(2):
            response = await self._call(run, services, journal, totals, PLAN_INSTRUCTION, messages)
            if isinstance(response, Progress):
                return dataclasses.replace(response, final_output=None, last_text="")  # a plan is no result
            try:
                titles = parse_plan(response.text)
            except PlanInvalid as exc:
                if attempt:
                    return totals.progress(
                        status="failed", error={"code": "plan_invalid", "message": f"the plan is invalid: {exc}"}
                    )
                retry = (
                    f'That reply is not a valid plan ({exc}). Reply with JSON only: {{"todos": [{{"title": "..."}}]}}'
                )
                messages = [
                    *messages,
                    ChatMessage(role="assistant", content=response.text),
                    ChatMessage(role="user", content=retry),
                ]
                continue
            plan.steps = [Step(f"todo_{index}", title) for index, title in enumerate(titles, 1)]
            journal.event(PlanCreated(todos=[PlanTodo(id=s.id, title=s.title) for s in plan.steps]))
            return None
        raise AssertionError("unreachable")

    async def _summary(
        self, run: TurnRun, services: TurnServices, journal: TurnJournal, totals: _Totals, plan: Plan
    ) -> Progress:
        outline = f"The plan:\n{plan.outline(None)}\n\nThe steps' outputs:\n{plan.outputs()}"
        messages = [*run.history, ChatMessage(role="user", content=outline)]
        schema = run.output_schema
        for attempt in range(2):
            response = await self._call(run, services, journal, totals, SUMMARY_INSTRUCTION, messages, schema=schema)
            if isinstance(response, Progress):
                return response if response.final_output else dataclasses.replace(response, final_output=plan.outputs())
            if schema is None:
                return totals.progress(status="completed", final_output=response.text)
            verdict = judge_answer(response.text, schema, repaired=attempt > 0)
            if isinstance(verdict, Accepted):
                return totals.progress(status="completed", final_output=response.text, output=verdict.output)
            if isinstance(verdict, Rejected):
                return totals.progress(status="failed", error=verdict.error)
            answer = ChatMessage(role="assistant", content=response.text)
            messages = [*messages, answer, ChatMessage(role="user", content=verdict.prompt)]
        raise AssertionError("unreachable")

    async def _call(
        self,
        run: TurnRun,
        services: TurnServices,
        journal: TurnJournal,
        totals: _Totals,
        system: str,
        messages: list[ChatMessage],
        *,
        schema: dict[str, Any] | None = None,
    ) -> ModelResponse | Progress:
        """One model call outside the loop (plan, summary), governed and recorded like the loop's.

        A `Progress` with an outcome instead of the reply: the budget or the quota refused the call
        (`budget_exceeded`), the provider failed it, or the reply spent the budget (its text is the
        partial result, like a loop's reply).
        """
        model = run.snapshot["model"]
        request = ModelRequest(
            model=model,
            system=system,
            messages=messages,
            tools=[],
            max_tokens=int(model.get("max_tokens", 1024)),
            call_index=totals.calls,
            output_schema=schema,
        )
        spent = totals.spent()
        governance = CallGovernance(_budget(run), spent, services.quota, services.governance)
        outcome = await governed_call(request, governance, provider=services.provider, journal=journal, kind="plan")
        if isinstance(outcome, Refused):
            return totals.progress(status="budget_exceeded", error=exceeded(outcome.code, outcome.reason, spent))
        if isinstance(outcome, Unanswered):
            totals.add(outcome.usage.input_tokens, outcome.usage.output_tokens)
            return totals.progress(status="failed", error={"code": outcome.code, "message": outcome.message})
        response = outcome.response
        totals.calls += 1
        totals.add(response.input_tokens, response.output_tokens)
        totals.last_text = response.text
        if outcome.over is not None:
            error = exceeded("budget_exceeded", outcome.over, totals.spent())
            return totals.progress(status="budget_exceeded", error=error, final_output=response.text or None)
        return response

    @staticmethod
    def _step_run(
        run: TurnRun, plan: Plan, step: Step, conversation: list[ChatMessage], totals: _Totals, going_on: bool
    ) -> TurnRun:
        """The inner loop's run for one todo, from the turn's running totals. A new step's history ends
        with its goal; a step `going_on` goes on from its stored messages with the run's decisions (an
        approval's resume) or through the inner runtime's own continuation (a continued run)."""
        opening = goal(plan, step, run.input)
        return dataclasses.replace(
            run,
            input=opening.content,
            history=conversation if going_on else [*conversation, opening],
            loop_count=totals.loop_count,
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            resumed_by=run.resumed_by if going_on else None,
            decisions=run.decisions if going_on else {},
            pending=run.pending if going_on else [],
            last_text=run.last_text if going_on else "",
            continued=run.continued if going_on else None,
            output_schema=None,
        )


def _over_budget(run: TurnRun, plan: Plan, totals: _Totals) -> Progress | None:
    """`budget_exceeded` with the done steps' outputs once the turn's budget is spent; None while it is not."""
    if (reason := spent_reason(_budget(run), totals.spent())) is None:
        return None
    error = exceeded("budget_exceeded", reason, totals.spent())
    return totals.progress(status="budget_exceeded", error=error, final_output=plan.outputs() or None)


def _budget(run: TurnRun) -> Budget:
    return Budget(run.max_output_tokens, run.max_total_tokens)


def _calls(history: list[ChatMessage]) -> int:
    """Model calls so far: the scripted provider plays its script by this index."""
    return sum(1 for m in history if m.role == "assistant")
