"""Doing one work item of a run: a generator's request, a forecasting model's answers, the translation, or the
literature step's check of a selected hypothesis (the literature room's, registered through screening.hooks).

Model calls happen outside any transaction; their results are written in one transaction together with the item's
end, and only while the worker still holds the item's claim (see reviewapp.core.claims).
"""

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviewapp.core.claims import work_attempt, work_claim, work_finish
from screening import hooks, llm, parsing, prompts
from screening.llm.models import ModelCall, ModelEndpoint
from screening.models import Forecast, Hypothesis, Run, RunWorkItem, Translation
from screening.selectors import run_role_endpoint
from screening.services import forecast_requests
from screening.services.progress import ROLE_OF_STEP, run_advance

logger = logging.getLogger(__name__)

Step = RunWorkItem.Step
State = RunWorkItem.State
# Hypotheses per translation request, so that a reply stays well under the endpoints' token limits.
TRANSLATION_BATCH = 10
# The run statuses in which each step's items may be worked on.
STATUSES_OF_STEP: dict[str, tuple[str, ...]] = {
    Step.GENERATE: (Run.Status.GENERATING,),
    Step.STAGE1: (Run.Status.SCREENING_STAGE1,),
    Step.STAGE2: (Run.Status.SCREENING_STAGE2,),
    Step.NOVELTY: (Run.Status.CHECKING_NOVELTY,),
    Step.TRANSLATE: (Run.Status.COMPLETED,),
    Step.REPEAT: Run.SELECTION_MADE_STATUSES,
}


@dataclass
class Outcome:
    """What doing an item gave: success or the reason it failed, and the writes that record it."""

    ok: bool
    error: str = ""
    write: Callable[[], None] | None = None


def work_item_perform(*, item_id: int) -> None:
    """Claim the item, do it, record it, and move the run on when its step is complete.

    An item that is already finished or held by another worker is left alone (a redelivered task is harmless)."""
    item = RunWorkItem.objects.select_related("run").filter(pk=item_id).first()
    if item is None:
        return
    token = _claim(item)
    if token is not None:
        with work_attempt(RunWorkItem, item.pk, token, label=f"Work item {item.pk} of run {item.run.public_id}"):
            _record(item, token, _performer(item.step)(item))
    run_advance(run_id=item.run_id)


def _claim(item: RunWorkItem) -> uuid.UUID | None:
    """A fresh token if this worker now holds the item; None if the item is not pending or its step is over."""
    if item.run.status not in STATUSES_OF_STEP[item.step]:
        return None
    token = work_claim(RunWorkItem, item.pk)
    if token is not None:
        _touch(item.run_id)
    return token


def _record(item: RunWorkItem, token: uuid.UUID, outcome: Outcome) -> None:
    now = timezone.now()
    with transaction.atomic():
        held = work_finish(RunWorkItem, item.pk, token, failed=not outcome.ok, error=outcome.error)
        if not held:
            # The sweeper gave the item to another worker meanwhile: that worker records it.
            logger.info("Work item %s was taken over; its result is not recorded twice", item.pk)
            return
        if outcome.write is not None:
            outcome.write()
        Run.objects.filter(pk=item.run_id).update(last_progress_at=now, updated_at=now)


def _touch(run_id: int) -> None:
    now = timezone.now()
    Run.objects.filter(pk=run_id).update(last_progress_at=now, updated_at=now)


def _endpoint(item: RunWorkItem) -> tuple[dict, ModelEndpoint | None]:
    role = ROLE_OF_STEP[item.step]
    return item.run.roster["roles"][role][item.slot], run_role_endpoint(item.run, role, item.slot)


# Generation ----------------------------------------------------------------------------------------------------


def _generate(item: RunWorkItem) -> Outcome:
    run = item.run
    member, endpoint = _endpoint(item)
    if endpoint is None:
        return Outcome(ok=False, error=f"the endpoint {member['display_name']} no longer exists")
    system, user = prompts.generation_messages(
        question=run.question, background=run.background, count=run.generation_count
    )
    completion = llm.complete(
        endpoint=endpoint,
        system=system,
        user=user,
        purpose="generate",
        run=run,
        json_schema=prompts.HYPOTHESES_SCHEMA,
    )
    if not completion.usable:
        return Outcome(ok=False, error=completion.error or "no usable reply")
    parsed = parsing.parse_hypotheses(completion.text)
    if not parsed:
        return Outcome(ok=False, error="no hypothesis in the reply: " + "; ".join(parsed.problems[:5]))

    def write():
        Hypothesis.objects.bulk_create(
            Hypothesis(
                run=run,
                source=f"generator-{item.slot}",
                source_index=index,
                author_endpoint=endpoint,
                author_name=member["display_name"],
                author_company=member["company"],
                author_simulated=member["simulated"],
                statement=values["statement"],
                mechanism=values["mechanism"],
                prediction=values["prediction"],
                domain_category=values["domain_category"][:200],
            )
            for index, values in enumerate(parsed)
        )

    return Outcome(ok=True, write=write)


# Forecasts -----------------------------------------------------------------------------------------------------


def ask_forecasts(
    *, endpoint: ModelEndpoint, system: str, user: str, labels: list[str], purpose: str, run: Run, parse=None
):
    """The protocol's question with its one "ask once more" (docs/protocol.md#reading-replies).

    A reply that is not JSON, misses an id or repeats one is asked once more with the same request. After the second
    try a parseable reply gives its valid answers (null for the rest); an unusable one gives None: no vote.
    Returns what was read and the call whose reply it was read from."""
    parse = parse or parsing.parse_forecasts
    return llm.ask_twice(
        lambda text: parse(text, labels),
        after_reply=lambda: _touch(run.pk),
        endpoint=endpoint,
        system=system,
        user=user,
        purpose=purpose,
        run=run,
        json_schema=prompts.FORECAST_SCHEMA if parse is parsing.parse_forecasts else None,
    )


# The detailed instruction's fields kept as the model gave them, beside the probability and the recommendation.
DETAILED_FIELDS = ("support_from_background", "assumptions", "contradictions", "reason", "test")


@dataclass
class Answer:
    """One model's answer about one hypothesis: the vote and what the question's reply adds."""

    vote: bool | None
    p_experimental_support: float | None = None
    recommend_for_testing: bool | None = None
    detailed: dict | None = None
    single_vote: bool | None = None


def _detailed_answer(forecast: parsing.DetailedForecast) -> Answer:
    return Answer(
        vote=forecast.recommend_for_testing,
        p_experimental_support=forecast.p_experimental_support,
        recommend_for_testing=forecast.recommend_for_testing,
        detailed={name: forecast.raw[name] for name in DETAILED_FIELDS if name in forecast.raw},
    )


def _ask_question(
    run: Run, endpoint: ModelEndpoint, question: str, items: list[tuple[str, str]], purpose: str
) -> tuple[dict[str, Answer] | None, ModelCall | None]:
    """Ask one request in one of the three wordings (docs/protocol.md#forecast-modes): id → Answer, or None when no
    usable reply came after asking twice; and the call the answers were read from."""
    labels = [label for label, _ in items]
    if question == Run.Question.DETAILED:
        system, user = prompts.detailed_forecast_messages(
            question=run.question, background=run.background, items=items, grok=endpoint.is_grok
        )
        result, call = ask_forecasts(
            endpoint=endpoint,
            system=system,
            user=user,
            labels=labels,
            purpose=purpose,
            run=run,
            parse=parsing.parse_detailed_forecasts,
        )
        if result is None:
            return None, call
        return {
            label: _detailed_answer(forecast) if forecast else Answer(vote=None)
            for label, forecast in result.forecasts.items()
        }, call
    if question == Run.Question.SINGLE:
        ((label, text),) = items
        system, user = prompts.single_hypothesis_messages(label=label, text=text, grok=endpoint.is_grok)
    else:
        system, user = prompts.forecast_messages(
            question=run.question, background=run.background, items=items, grok=endpoint.is_grok
        )
    result, call = ask_forecasts(endpoint=endpoint, system=system, user=user, labels=labels, purpose=purpose, run=run)
    if result is None:
        return None, call
    single = question == Run.Question.SINGLE
    return {
        label: Answer(vote=vote, single_vote=vote if single else None) for label, vote in result.votes.items()
    }, call


def _forecast(item: RunWorkItem) -> Outcome:
    stage = 1 if item.step == Step.STAGE1 else 2
    return _ask_request(item.run, forecast_requests.run_requests(item.run, stage)[item.slot], round_=1)


def _repeat(item: RunWorkItem) -> Outcome:
    """A first-round request sent again as it was (docs/protocol.md#repeating-the-forecasts)."""
    return _ask_request(item.run, forecast_requests.repeat_requests(item.run)[item.slot], round_=2)


def _ask_request(run: Run, request: forecast_requests.ForecastRequest, *, round_: int) -> Outcome:
    """One forecast request of one model: its answers are stored per hypothesis with the call that gave them; in the
    first round they decide stage 1."""
    member = run.roster["roles"][request.role][request.member]
    endpoint = run_role_endpoint(run, request.role, request.member)
    hypotheses = list(request.hypotheses)
    items = [
        (label, prompts.hypothesis_text(h.statement, h.mechanism, h.prediction))
        for label, h in zip(request.labels, hypotheses, strict=True)
    ]
    matrix = run.design == Run.Design.MATRIX
    question = run.forecast_question if matrix else Run.Question.SHORT
    purpose = f"stage{request.stage}" + ("_repeat" if round_ == 2 else "")
    answers, call = None, None
    if endpoint is None:
        error = f"the endpoint {member['display_name']} no longer exists"
    else:
        answers, call = _ask_question(run, endpoint, question, items, purpose)
        error = "" if answers is not None else "no usable reply after asking twice"
    # A pooled run's optional modes ask a model that answered the protocol's question; their answers sit beside its
    # vote. (There are answers only when there is an endpoint.)
    detailed, single = {}, {}
    if endpoint is not None and answers is not None and not matrix and round_ == 1:
        detailed = _detailed(run, endpoint, items, request.stage)
        single = _single(run, endpoint, items, request.stage)

    def write():
        forecasts = []
        for label, hypothesis in zip(request.labels, hypotheses, strict=True):
            answer = (answers or {}).get(label) or Answer(vote=None)
            if label in detailed:
                answer = replace(detailed[label], vote=answer.vote)
            forecasts.append(
                Forecast(
                    hypothesis=hypothesis,
                    stage=request.stage,
                    round=round_,
                    endpoint=endpoint,
                    model_key=member["model_id"],
                    model_call=call,
                    vote=answer.vote,
                    p_experimental_support=answer.p_experimental_support,
                    recommend_for_testing=answer.recommend_for_testing,
                    detailed=answer.detailed,
                    single_vote=single.get(label, answer.single_vote),
                )
            )
            if request.stage == 1 and round_ == 1:
                hypothesis.stage1 = {
                    True: Hypothesis.Stage1.KEPT,
                    False: Hypothesis.Stage1.DISCARDED,
                    None: Hypothesis.Stage1.NO_ANSWER,
                }[answer.vote]
        Forecast.objects.bulk_create(forecasts, batch_size=500)
        if request.stage == 1 and round_ == 1:
            Hypothesis.objects.bulk_update(hypotheses, ["stage1"], batch_size=500)

    return Outcome(ok=answers is not None, error=error, write=write)


def _detailed(run: Run, endpoint: ModelEndpoint, items, stage: int) -> dict[str, Answer]:
    """The detailed instruction (docs/protocol.md#detailed-instruction), when enabled: label → its Answer, beside the
    boolean."""
    if not settings.OPEN_HYPOTHESIS_DETAILED_FORECASTS or not items:
        return {}
    answers, _ = _ask_question(run, endpoint, Run.Question.DETAILED, items, f"stage{stage}_detailed")
    return answers or {}


def _single(run: Run, endpoint: ModelEndpoint, items, stage: int) -> dict[str, bool | None]:
    """The single-hypothesis question, when enabled: label → its boolean, beside the protocol's."""
    if not settings.OPEN_HYPOTHESIS_SINGLE_FORECASTS:
        return {}
    votes: dict[str, bool | None] = {}
    for label, text in items:
        asked = prompts.single_hypothesis_id(label)
        answers, _ = _ask_question(run, endpoint, Run.Question.SINGLE, [(asked, text)], f"stage{stage}_single")
        votes[label] = answers[asked].vote if answers else None
    return votes


# Literature ----------------------------------------------------------------------------------------------------


def hypothesis_literature_record(*, hypothesis: Hypothesis, verdict: str, evidence: str, reference: dict | None):
    """The literature room's verdict on a selected hypothesis (written in the transaction that records its item)."""
    Hypothesis.objects.filter(pk=hypothesis.pk).update(
        literature_verdict=verdict, literature_evidence=evidence, literature_reference=reference
    )


# Translation ---------------------------------------------------------------------------------------------------


def _translate(item: RunWorkItem) -> Outcome:
    run = item.run
    endpoint = run_role_endpoint(run, "translator")
    error = ""
    rendered = {}
    if endpoint is None:
        error = "no translator in the roster"
    else:
        hypotheses = list(run.hypotheses.exclude(label="").order_by("position"))
        for start in range(0, len(hypotheses), TRANSLATION_BATCH):
            batch = hypotheses[start : start + TRANSLATION_BATCH]
            translated = _translate_batch(run, endpoint, batch)
            if translated is None:
                error = "no usable translation after asking twice"
                break
            rendered.update(translated)
    state = Translation.State.FAILED if error else Translation.State.READY

    def write():
        Translation.objects.filter(run=run, language=run.language).update(
            state=state, hypotheses=rendered if not error else {}, error=error, updated_at=timezone.now()
        )

    return Outcome(ok=not error, error=error, write=write)


def _translate_batch(run: Run, endpoint: ModelEndpoint, batch) -> dict | None:
    items = [
        {"id": h.label, "statement": h.statement, "mechanism": h.mechanism, "prediction": h.prediction} for h in batch
    ]
    system, user = prompts.translation_messages(items=items)
    labels = {h.label for h in batch}
    for attempt in (1, 2):
        completion = llm.complete(
            endpoint=endpoint, system=system, user=user, purpose="translate", run=run, protocol_attempt=attempt
        )
        _touch(run.pk)
        translated = _read_translations(completion.text, labels) if completion.usable else None
        if translated is not None:
            return translated
    return None


_TRANSLATED_FIELDS = ("statement", "mechanism", "prediction")


def _read_translations(text: str | None, labels: set[str]) -> dict | None:
    """{label: {statement, mechanism, prediction}} when the reply renders every hypothesis once, else None."""
    try:
        obj = llm.extract_json(text)
    except llm.ReplyParseError:
        return None
    entries = obj.get("translations") if isinstance(obj, dict) else None
    if not isinstance(entries, list):
        return None
    rendered = {}
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        label = llm.normalize_label(entry.get("id"))
        fields = {name: entry.get(name) for name in _TRANSLATED_FIELDS}
        if label not in labels or label in rendered or not all(isinstance(v, str) for v in fields.values()):
            return None
        rendered[label] = fields
    return rendered if set(rendered) == labels else None


def _no_literature_check(item: RunWorkItem) -> Outcome:
    return Outcome(ok=False, error="no literature check is installed")


def _performer(step: str) -> Callable[[RunWorkItem], Outcome]:
    """This room's function for a step; the literature step's is the literature room's (screening.hooks)."""
    if step == Step.NOVELTY:
        return hooks.literature_step() or _no_literature_check
    return _PERFORM[step]


_PERFORM: dict[str, Callable[[RunWorkItem], Outcome]] = {
    Step.GENERATE: _generate,
    Step.STAGE1: _forecast,
    Step.STAGE2: _forecast,
    Step.TRANSLATE: _translate,
    Step.REPEAT: _repeat,
}
