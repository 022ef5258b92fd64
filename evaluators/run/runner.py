"""The evaluation run: every prompt version over every scenario, replies scored and stored.

Flow per case (one scenario x one prompt version):
    responder (one call per user turn, conversation so far)  ->  transcript
    -> heuristics + expectations (batched, in a worker thread)  ->  extra stages (the judge)
    -> run store (one JSON line, at once)  ->  sinks (Langfuse)  ->  progress

Resuming: a case whose replies all came back and were scored, but whose judge failed
(`CaseResult.rejudge`), is not played again: its stored turns are scored again and go through
the stages (the judge) as a played case does, so the judgement is of the replies on record and
the companion is not called. Any other unfinished case is played again.

Concurrency: `concurrency` workers each play whole conversations, longest first, so no more
than `concurrency` calls are in flight and long conversations do not end up as a tail.
Scoring runs beside the calls, in batches, so spaCy parses many replies per pass.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evaluators.core.completion import Completion
from evaluators.core.failures import Failure, FailureKind
from evaluators.core.retry import CallFailed
from evaluators.inputs.contracts import PromptVersion, Scenario
from evaluators.inputs.persona import Persona
from evaluators.run.responder import ChatRequest, Responder, build_messages
from evaluators.run.simulation.play import ScriptedTurns, SimulatedTurns
from evaluators.run.simulation.simulator import Simulator
from evaluators.run.simulation.validity import validate_simulation, validity_failures
from evaluators.scoring.assertions import check_assertions
from evaluators.scoring.barge_in import cut_after_words, recovery_checks
from evaluators.scoring.caps import case_scores
from evaluators.scoring.contracts import ReplyCase, Unscored
from evaluators.scoring.expectations import check_reply
from evaluators.scoring.heuristics import HeuristicEvaluator
from evaluators.store.records import CaseResult, TurnResult, case_id
from evaluators.store.run_store import RunStore, utc_now

SCORING_BATCH = 64


class CaseSink(Protocol):
    """Receives every stored case (e.g. the Langfuse exporter); must not raise."""

    async def on_case(self, case: CaseResult) -> None: ...

    async def aclose(self) -> None: ...


# A stage enriches a scored case before it is stored (e.g. the LLM judge).
CaseStage = Callable[[CaseResult], Awaitable[CaseResult]]
ProgressCallback = Callable[[CaseResult], None]


@dataclass(frozen=True)
class RunPlan:
    """What to run: prompt versions x scenarios, and an optional model override.

    A persona is among the scenarios as a `Scenario` of family "personas" (its opening as the
    one scripted turn); `personas` maps its id to the persona, whose later turns are simulated,
    up to `max_turns` (the run's --turns) or else the persona's own limit.
    """

    prompts: Sequence[PromptVersion]
    scenarios: Sequence[Scenario]
    model_override: str | None = None
    personas: Mapping[str, Persona] = field(default_factory=dict)
    max_turns: int | None = None
    repeats: int = 1  # run --repeat: each (version, scenario) is played this many times
    # Offline: (version, scenario) -> the plays the sample data records, when more than one; such a
    # pair is played that many times even without --repeat (ReplayResponder.recorded_plays).
    recorded_plays: Mapping[tuple[str, str], int] = field(default_factory=dict)

    def plays(self, prompt: PromptVersion, scenario: Scenario) -> int:
        return max(self.repeats, self.recorded_plays.get((prompt.version, scenario.id), 1))

    def cases(self) -> list[tuple[PromptVersion, Scenario, int]]:
        """(version, scenario, repeat) for every case, repeats of one scenario side by side."""
        return [(prompt, scenario, repeat) for prompt in self.prompts for scenario in self.scenarios
                for repeat in range(self.plays(prompt, scenario))]

    def model_for(self, prompt: PromptVersion) -> str:
        return self.model_override or prompt.model

    def turns_for(self, scenario: Scenario) -> int:
        """How many exchanges the scenario plays at most."""
        persona = self.personas.get(scenario.id)
        return len(scenario.turns) if persona is None else self.max_turns or persona.max_turns


@dataclass
class Transcript:
    """A played conversation before scoring; `error` is set when a call failed for good."""

    prompt: PromptVersion
    scenario: Scenario
    model: str
    repeat: int = 0
    users: list[str] = field(default_factory=list)  # the user messages answered, one per reply
    replies: list[Completion] = field(default_factory=list)
    spoken: list[str | None] = field(default_factory=list)  # per reply: the words heard before a barge-in
    error: str | None = None
    simulation: dict | None = None  # a simulated conversation's record (SimulatedTurns.record)


@dataclass
class RunOutcome:
    cases: list[CaseResult]  # every case of the plan that has a record, latest record each
    ran: int  # cases run in this invocation, played or re-judged (the rest were already finished)
    skipped: int
    rejudged: int = 0  # of `ran`, the cases judged again from their stored replies (no companion call)
    scoring_s: float = 0.0  # wall time spent scoring (heuristics + expectations), for benchmarks


def user_context(scenario: Scenario) -> list[str]:
    """What the companion knows about the user before the first turn (profile notes).

    The heuristics' history for a turn is this plus the user's earlier turns, not the
    companion's own earlier replies: personalization means picking up what the user said,
    and a reply that repeats the companion's previous answer should not earn carry-over.
    """
    return [scenario.profile.notes] if scenario.profile.notes else []


def recovery_failures(turns: Sequence[TurnResult]) -> list[Failure]:
    """A failed barge-in recovery check, as a typed failure naming the check and the turn."""
    return [Failure(FailureKind.BARGE_IN_RECOVERY, f"turn {turn.index + 1}: {check['reason']}", check["name"])
            for turn in turns for check in turn.barge_in_recovery if not check["passed"]]


class Runner:
    def __init__(
        self,
        plan: RunPlan,
        responder: Responder,
        store: RunStore,
        evaluator: HeuristicEvaluator,
        *,
        concurrency: int = 8,
        stages: Sequence[CaseStage] = (),
        sinks: Sequence[CaseSink] = (),
        on_case: ProgressCallback | None = None,
        simulator: Simulator | None = None,
        finalize: Callable[[CaseResult], CaseResult] | None = None,
        rejudge: Collection[str] = (),
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.plan = plan
        self.responder = responder
        self.store = store
        self.evaluator = evaluator
        self.concurrency = concurrency
        self.stages = list(stages)
        self.sinks = list(sinks)
        self.on_case = on_case
        self.simulator = simulator
        # The last step before the store: types the case's failures (the release stage's rules,
        # which this layer cannot import, so the pipeline hands it in).
        self.finalize = finalize
        # Ids of stored cases to judge again from their stored turns (`CaseResult.rejudge`): the
        # pipeline names them when the stages hold a judge to ask, since storing such a case again
        # without one would drop its failed judgement and call it finished.
        self.rejudge = frozenset(rejudge)
        self._scoring_s = 0.0

    def pending(self) -> list[tuple[PromptVersion, Scenario, int]]:
        """Cases to play: no finished record and none to re-judge (each repeat on its own), longest
        conversation first."""
        return self._pending(set(self.to_rejudge()))

    def _pending(self, rejudged: set[str]) -> list[tuple[PromptVersion, Scenario, int]]:
        finished = self.store.finished_ids() | rejudged
        todo = [(p, s, r) for p, s, r in self.plan.cases() if case_id(p.version, s.id, r) not in finished]
        return sorted(todo, key=lambda item: -self.plan.turns_for(item[1]))

    def to_rejudge(self) -> dict[str, CaseResult]:
        """The stored cases of the plan to judge again from their stored turns, by id (any other
        unfinished case is played again)."""
        if not self.rejudge:
            return {}
        wanted = {case_id(p.version, s.id, r) for p, s, r in self.plan.cases()} & self.rejudge
        return {case.case_id: case for case in self.store.read_cases() if case.case_id in wanted and case.rejudge}

    def stored_transcript(self, case: CaseResult, prompt: PromptVersion, scenario: Scenario) -> Transcript:
        """The stored case as the transcript its play gave: the same users, replies (byte for byte,
        with the usage, timings and cache mark of the calls that made them), barge-in cuts and
        simulation record, so scoring and the stages see what they saw when it was played."""
        transcript = Transcript(prompt, scenario, self.plan.model_for(prompt), case.repeat, simulation=case.simulation)
        for turn in case.turns:
            transcript.users.append(turn.user)
            transcript.replies.append(Completion(
                text=turn.reply, model=turn.model, usage=turn.usage, latency_s=turn.latency_s,
                time_to_first_token_s=turn.time_to_first_token_s, tokens_per_s=turn.tokens_per_s,
                cached=turn.cached, attempts=turn.attempts, truncated=turn.truncated, truncation=turn.truncation,
                notices=turn.notices))
            transcript.spoken.append(turn.spoken)
        return transcript

    async def run(self) -> RunOutcome:
        stored = self.to_rejudge()
        rejudge = [self.stored_transcript(stored[case_id(p.version, s.id, r)], p, s) for p, s, r in self.plan.cases()
                   if case_id(p.version, s.id, r) in stored]
        todo = self._pending(set(stored))
        skipped = len(self.plan.cases()) - len(todo) - len(rejudge)
        queue: asyncio.Queue[Transcript | None] = asyncio.Queue()
        for transcript in rejudge:  # scored and judged beside the plays: no call to the companion
            queue.put_nowait(transcript)
        work = iter(todo)

        async def worker() -> None:
            for prompt, scenario, repeat in work:  # a shared iterator: each case is taken once
                await queue.put(await self._play(prompt, scenario, repeat))

        scorer = asyncio.create_task(self._score_and_store(queue))
        try:
            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, max(len(todo), 1)))))
            await queue.put(None)
            await scorer
        finally:
            if not scorer.done():
                scorer.cancel()
        wanted = {case_id(p.version, s.id, r) for p, s, r in self.plan.cases()}
        cases = [case for case in self.store.read_cases() if case.case_id in wanted]
        return RunOutcome(cases=cases, ran=len(todo) + len(rejudge), skipped=skipped,
                          scoring_s=round(self._scoring_s, 4), rejudged=len(rejudge))

    # --- playing a conversation ------------------------------------------------------------------
    def _user_turns(self, prompt: PromptVersion, scenario: Scenario,
                    repeat: int = 0) -> ScriptedTurns | SimulatedTurns:
        """Where the user's messages come from: the script, or the simulator playing the persona."""
        persona = self.plan.personas.get(scenario.id)
        if persona is None:
            return ScriptedTurns(scenario)
        if self.simulator is None:
            raise CallFailed("no simulator configured for the persona family", 0)
        return SimulatedTurns(self.simulator, persona, prompt.version, self.plan.turns_for(scenario), repeat=repeat)

    async def _play(self, prompt: PromptVersion, scenario: Scenario, repeat: int = 0) -> Transcript:
        model = self.plan.model_for(prompt)
        transcript = Transcript(prompt, scenario, model, repeat)
        messages = build_messages(prompt, scenario)
        try:
            source = self._user_turns(prompt, scenario, repeat)
        except CallFailed as error:
            transcript.error = error.reason
            return transcript
        while True:
            index = len(transcript.replies)
            try:
                user = await source.next_message(list(zip(transcript.users, (r.text for r in transcript.replies))))
            except CallFailed as error:
                transcript.error = f"turn {index + 1}: simulated user: {error.reason}"
                break
            if user is None:
                break
            messages.append({"role": "user", "content": user})
            request = ChatRequest(prompt=prompt, messages=list(messages), scenario_id=scenario.id,
                                  turn_index=index, model=model, repeat=repeat)
            try:
                completion = await self.responder.complete(request)
            except CallFailed as error:
                transcript.error = f"turn {index + 1}: {error.reason}"
                break
            transcript.users.append(user)
            transcript.replies.append(completion)
            interrupt = scenario.interrupt_after(index)
            spoken = cut_after_words(completion.text, interrupt) if interrupt else None
            transcript.spoken.append(spoken)
            if completion.truncated:  # kept on record, never scored, and the conversation cannot go on from it
                transcript.error = f"turn {index + 1}: truncated reply: {completion.truncation}"
                break
            # A barge-in: the companion's history holds what was spoken, as a voice pipeline's does.
            messages.append({"role": "assistant", "content": completion.text if spoken is None else spoken})
        transcript.simulation = source.record()
        return transcript

    # --- scoring and storing ------------------------------------------------------------------------
    async def _score_and_store(self, queue: asyncio.Queue[Transcript | None]) -> None:
        finishing: list[asyncio.Task] = []
        try:
            await self._score_batches(queue, finishing)
            for stage in self.stages:  # a stage that waits for every case (a judge batch) learns how many
                if (expect := getattr(stage, "cases_expected", None)) is not None:
                    expect(len(finishing))
            await asyncio.gather(*finishing)
        finally:
            for task in finishing:
                task.cancel()  # only unfinished ones are affected: on an error or interrupt

    async def _score_batches(self, queue: asyncio.Queue[Transcript | None], finishing: list[asyncio.Task]) -> None:
        done = False
        while not done:
            batch = [await queue.get()]
            while len(batch) < SCORING_BATCH and not queue.empty():
                batch.append(queue.get_nowait())
            if batch[-1] is None:
                done = True
            transcripts = [item for item in batch if item is not None]
            if not transcripts:
                continue
            started = time.perf_counter()
            cases = await asyncio.to_thread(self._score, transcripts)
            self._scoring_s += time.perf_counter() - started
            for case in cases:
                if self.stages:  # stages call APIs (the judge): cases go through them side by side
                    finishing.append(asyncio.create_task(self._finish_case(case)))
                else:
                    await self._finish_case(case)

    async def _finish_case(self, case: CaseResult) -> None:
        """Stages, then the store (at once, so a kill keeps it), then sinks and progress."""
        for stage in self.stages:
            try:
                case = await stage(case)
            except Exception as error:  # noqa: BLE001 - a stage bug fails its case, not the run
                case = case.model_copy(update={"status": "failed",
                                               "error": f"{getattr(stage, '__name__', type(stage).__name__)} "
                                                        f"failed: {type(error).__name__}: {error}"})
        if self.finalize is not None:
            try:
                case = self.finalize(case)
            except Exception as error:  # noqa: BLE001 - the case is kept without typed failures
                case = case.model_copy(update={"failures": [{"kind": "scoring_error", "name": "",
                                                             "reason": f"typing failures: {error}"}]})
        self.store.append(case)
        for sink in self.sinks:
            await sink.on_case(case)
        if self.on_case is not None:
            self.on_case(case)

    def _score(self, transcripts: list[Transcript]) -> list[CaseResult]:
        """Heuristics and expectations for a batch; a scoring error fails only its own cases."""
        try:
            return self._score_batch(transcripts)
        except Exception:  # noqa: BLE001 - isolate the culprit by scoring one at a time
            results = []
            for transcript in transcripts:
                try:
                    results.extend(self._score_batch([transcript]))
                except Exception as error:  # noqa: BLE001 - recorded on the case, run goes on
                    transcript.error = f"scoring failed: {type(error).__name__}: {error}"
                    results.append(self._case(transcript, []))
            return results

    def _score_batch(self, transcripts: list[Transcript]) -> list[CaseResult]:
        reply_cases = []
        for number, transcript in enumerate(transcripts):
            history = user_context(transcript.scenario)
            for index, completion in enumerate(transcript.replies):
                user = transcript.users[index]
                if not completion.truncated:  # a reply cut short is never scored as if it were whole
                    reply_cases.append(ReplyCase(id=f"{number}:{index}", history=list(history),
                                                 user_message=user, response=completion.text))
                history.append(user)
        scored = iter(self.evaluator.score_cases(reply_cases))
        results = []
        for transcript in transcripts:
            turns = []
            for index, completion in enumerate(transcript.replies):
                if completion.truncated:
                    turns.append(self._turn(transcript, index, completion, None, []))
                    continue
                heuristics = next(scored)
                unscored = isinstance(heuristics, Unscored)
                if unscored:
                    # No English scores for it: the case fails with the reason, so no mean counts it.
                    transcript.error = transcript.error or f"turn {index + 1} not scored: {heuristics.error}"
                expectations = [] if unscored else check_reply(transcript.scenario.expectations_for(index),
                                                               completion.text, self.evaluator.rubric,
                                                               heuristics.flags)
                record = None if unscored else heuristics.to_record()
                assertions = [] if record is None else check_assertions(
                    transcript.scenario.assertions_for(index), completion.text, record)
                turn = self._turn(transcript, index, completion, record, expectations, assertions)
                turns.append(self._with_recovery(transcript, index, turn))
            results.append(self._case(transcript, turns))
        return results

    def _with_recovery(self, transcript: Transcript, index: int, turn: TurnResult) -> TurnResult:
        """The turn after a cut reply gets the barge-in recovery checks (evaluators.scoring.barge_in)."""
        spoken = transcript.spoken[index - 1] if 0 < index <= len(transcript.spoken) else None
        if spoken is None:
            return turn
        outcomes = recovery_checks(full_reply=transcript.replies[index - 1].text, spoken=spoken, user=turn.user,
                                   reply=turn.reply, rubric=self.evaluator.rubric,
                                   meaning=getattr(self.evaluator, "meaning", None))
        return turn.model_copy(update={"barge_in_recovery": [outcome.as_dict() for outcome in outcomes]})

    @staticmethod
    def _turn(transcript: Transcript, index: int, completion: Completion, heuristics: dict | None,
              expectations: list, assertions: list | None = None) -> TurnResult:
        interrupt = transcript.scenario.interrupt_after(index)
        spoken = transcript.spoken[index] if index < len(transcript.spoken) else None
        return TurnResult(
            index=index, user=transcript.users[index], reply=completion.text,
            model=completion.model, usage=completion.usage, latency_s=completion.latency_s,
            time_to_first_token_s=completion.time_to_first_token_s, tokens_per_s=completion.tokens_per_s,
            cached=completion.cached, attempts=completion.attempts, truncated=completion.truncated,
            truncation=completion.truncation, notices=completion.notices, heuristics=heuristics,
            expectations=expectations, assertions=assertions or [],
            interrupted_after_words=interrupt if spoken is not None else None, spoken=spoken,
        )

    def _validated(self, transcript: Transcript) -> dict | None:
        """A simulated conversation's record with its validity (evaluators.run.simulation.validity)."""
        persona = self.plan.personas.get(transcript.scenario.id)
        # A replayed conversation's user side was written by hand (prompts/recorded/personas/):
        # there is no simulator to check, only a live one can drift.
        if transcript.simulation is None or persona is None or transcript.simulation.get("simulator") == "replay":
            return transcript.simulation
        validity = validate_simulation(transcript.users, [reply.text for reply in transcript.replies],
                                       transcript.simulation, persona, self.evaluator.rubric,
                                       getattr(self.evaluator, "meaning", None))
        return {**transcript.simulation, "validity": validity}

    def _case(self, transcript: Transcript, turns: list[TurnResult]) -> CaseResult:
        scenario, prompt = transcript.scenario, transcript.prompt
        ok = transcript.error is None and 0 < len(turns) == len(transcript.users)
        flags = sorted({flag["name"] for turn in turns for flag in (turn.heuristics or {}).get("flags", [])})
        # A flag on any turn caps the case too: a mean over clean turns must not dilute it.
        scores = case_scores((turn.heuristics for turn in turns), flags, self.evaluator.rubric) if ok else {}
        simulation = self._validated(transcript) if ok else transcript.simulation
        invalid = validity_failures((simulation or {}).get("validity"))
        if invalid:  # evidence about the simulator, not the companion: kept, never counted (missing evidence)
            ok = False
            transcript.error = "invalid simulation: " + "; ".join(f"{f.name}: {f.reason}" for f in invalid)
        return CaseResult(
            case_id=case_id(prompt.version, scenario.id, transcript.repeat),
            repeat=transcript.repeat,
            prompt_name=prompt.name,
            prompt_version=prompt.version,
            prompt_source=prompt.source,
            scenario_id=scenario.id,
            family=scenario.family,
            age_group=scenario.profile.age_group,
            demographic_group=scenario.profile.demographic_group,
            safety=scenario.safety,
            tags=list(scenario.tags),
            # The kind that answered this version (a prompt version may name its own target).
            responder=getattr(self.responder, "kind_for", lambda _: self.responder.kind)(prompt.version),
            status="ok" if ok else "failed",
            error=None if ok else (transcript.error or "incomplete transcript"),
            turns=turns,
            scores=scores,
            flags=flags,
            expectations_passed=all(e.passed for turn in turns for e in turn.expectations) if ok else None,
            simulation=simulation,
            failures=[failure.as_dict() for failure in (*recovery_failures(turns), *invalid)],
            finished_at=utc_now(),
        )
