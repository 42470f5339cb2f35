"""Doing one work item of a run: a generator's request, a forecasting model's answers, the translation, or the
literature step's check of a selected hypothesis (the literature room's, registered through screening.hooks).

Model calls happen outside any transaction; their results are written in one transaction together with the item's
end, and only while the worker still holds the item's claim (see reviewapp.core.claims).
"""

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviewapp.core.claims import work_attempt, work_claim, work_finish
from screening import hooks, llm, parsing, prompts
from screening.llm.models import ModelEndpoint
from screening.models import Forecast, Hypothesis, Run, RunWorkItem, Translation
from screening.selectors import run_role_endpoint
from screening.services.progress import ROLE_OF_STEP, run_advance

logger = logging.getLogger(__name__)

Step = RunWorkItem.Step
State = RunWorkItem.State
# Hypotheses per translation request, so that a reply stays well under the endpoints' token limits.
TRANSLATION_BATCH = 10
# The run status in which each step's items may be worked on.
STATUS_OF_STEP: dict[str, str] = {
    Step.GENERATE: Run.Status.GENERATING,
    Step.STAGE1: Run.Status.SCREENING_STAGE1,
    Step.STAGE2: Run.Status.SCREENING_STAGE2,
    Step.NOVELTY: Run.Status.CHECKING_NOVELTY,
    Step.TRANSLATE: Run.Status.COMPLETED,
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
    if item.run.status != STATUS_OF_STEP[item.step]:
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
    system, user = prompts.generation_messages(question=run.question, background=run.background)
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
    try a parseable reply gives its valid answers (null for the rest); an unusable one gives None: no vote."""
    parse = parse or parsing.parse_forecasts
    result, _ = ask_twice(
        lambda text: parse(text, labels),
        after_reply=lambda: _touch(run.pk),
        endpoint=endpoint,
        system=system,
        user=user,
        purpose=purpose,
        run=run,
        json_schema=prompts.FORECAST_SCHEMA if parse is parsing.parse_forecasts else None,
    )
    return result


def ask_twice(parse: Callable, *, after_reply: Callable[[], None] | None = None, **request):
    """One model request (llm.complete's arguments) with the protocol's one "ask once more"
    (docs/protocol.md#reading-replies): a reply that parse(text) does not read as complete is asked again.

    Returns what parse read, or None when no usable reply was read at all (parse gives an object with `parsed` and
    `complete`), and the last call. after_reply runs after each reply arrives (a heartbeat)."""
    result, call = None, None
    for attempt in (1, 2):
        completion = llm.complete(**request, protocol_attempt=attempt)
        if after_reply is not None:
            after_reply()
        result, call = (parse(completion.text) if completion.usable else None), completion.call
        if result is not None and result.complete:
            break
    return (result if result is not None and result.parsed else None), call


def _forecast(item: RunWorkItem) -> Outcome:
    run = item.run
    stage = 1 if item.step == Step.STAGE1 else 2
    member, endpoint = _endpoint(item)
    asked = run.hypotheses.exclude(label="").order_by("position")
    if stage == 2:
        asked = asked.filter(stage1=Hypothesis.Stage1.KEPT)
    hypotheses = list(asked)
    labels = [h.label for h in hypotheses]
    items = [(h.label, prompts.hypothesis_text(h.statement, h.mechanism, h.prediction)) for h in hypotheses]
    model_key = member["model_id"]
    if endpoint is None:
        votes, error = None, f"the endpoint {member['display_name']} no longer exists"
    else:
        system, user = prompts.forecast_messages(
            question=run.question, background=run.background, items=items, grok=endpoint.is_grok
        )
        votes = ask_forecasts(
            endpoint=endpoint, system=system, user=user, labels=labels, purpose=f"stage{stage}", run=run
        )
        error = "" if votes is not None else "no usable reply after asking twice"
    # The optional modes ask a model that answered the protocol's question; their answers sit beside its vote.
    # (There are votes only when there is an endpoint.)
    detailed = _detailed(run, endpoint, items, stage) if endpoint is not None and votes is not None else {}
    single = _single(run, endpoint, items, stage) if endpoint is not None and votes is not None else {}

    def write():
        forecasts = []
        for hypothesis in hypotheses:
            vote = votes.votes.get(hypothesis.label) if votes is not None else None
            extra = detailed.get(hypothesis.label)
            forecasts.append(
                Forecast(
                    hypothesis=hypothesis,
                    stage=stage,
                    endpoint=endpoint,
                    model_key=model_key,
                    vote=vote,
                    p_experimental_support=extra.p_experimental_support if extra else None,
                    recommend_for_testing=extra.recommend_for_testing if extra else None,
                    detailed={"reason": extra.reason, "test": extra.test} if extra else None,
                    single_vote=single.get(hypothesis.label),
                )
            )
            if stage == 1:
                hypothesis.stage1 = {
                    True: Hypothesis.Stage1.KEPT,
                    False: Hypothesis.Stage1.DISCARDED,
                    None: Hypothesis.Stage1.NO_ANSWER,
                }[vote]
        Forecast.objects.bulk_create(forecasts, batch_size=500)
        if stage == 1:
            Hypothesis.objects.bulk_update(hypotheses, ["stage1"], batch_size=500)

    return Outcome(ok=votes is not None, error=error, write=write)


def _detailed(run: Run, endpoint: ModelEndpoint, items, stage: int) -> dict:
    """The detailed instruction (docs/protocol.md#detailed-instruction), when enabled: label → DetailedForecast, beside
    the boolean."""
    if not settings.OPEN_HYPOTHESIS_DETAILED_FORECASTS or not items:
        return {}
    system, user = prompts.detailed_forecast_messages(
        question=run.question, background=run.background, items=items, grok=endpoint.is_grok
    )
    result = ask_forecasts(
        endpoint=endpoint,
        system=system,
        user=user,
        labels=[label for label, _ in items],
        purpose=f"stage{stage}_detailed",
        run=run,
        parse=parsing.parse_detailed_forecasts,
    )
    return {label: forecast for label, forecast in result.forecasts.items() if forecast} if result else {}


def _single(run: Run, endpoint: ModelEndpoint, items, stage: int) -> dict:
    """The single-hypothesis question, when enabled: label → its boolean, beside the protocol's."""
    if not settings.OPEN_HYPOTHESIS_SINGLE_FORECASTS:
        return {}
    answers = {}
    for label, text in items:
        system, user = prompts.single_hypothesis_messages(label=label, text=text, grok=endpoint.is_grok)
        result = ask_forecasts(
            endpoint=endpoint, system=system, user=user, labels=[label], purpose=f"stage{stage}_single", run=run
        )
        answers[label] = result.votes.get(label) if result else None
    return answers


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
}
