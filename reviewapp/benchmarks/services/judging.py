"""Judging a benchmark set: each model judge scores every hypothesis 0–5 for how well it matches its task's
reference statement (docs/protocol.md#model-judges).

A judge reads one task at a time: the research question, the reference statement and up to JUDGE_BATCH of the
task's hypotheses, numbered H1, H2… in an order shuffled with the set's seed, never with their authors. It answers
with JSON; a reply that is not JSON or misses, repeats or mis-scores a hypothesis is asked once more, as forecasts
are, and after the second try its valid scores are kept. Every request is a recorded model call
(screening.llm.providers.complete). The work runs as one background job per judge, so each judge has a page with its
state and progress, and a job started again only asks for the scores still missing.
"""

import csv
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.text import slugify

from reviewapp.analysis.judges import SCORES
from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet, BenchmarkTask, Judge, JudgeScore
from reviewapp.benchmarks.services.sets import BenchmarkError
from reviewapp.benchmarks.services.versions import benchmark_set_touch
from reviewapp.models import BackgroundJob
from reviewapp.selectors.exports import spreadsheet_text
from reviewapp.services.jobs import JobError, JobResult, ProgressCallback, exports_dir, job_create
from screening import llm
from screening.llm import ask_twice
from screening.prompts import hypothesis_text

logger = logging.getLogger(__name__)

JOB_KIND = "benchmark_judging"
# Hypotheses per request: enough to judge a task's list in a few requests, few enough for a complete reply.
JUDGE_BATCH = 20
PURPOSE = "judge"

JUDGE_SYSTEM = (
    "You are a scientist in the biology of ageing. You judge whether proposed hypotheses match a published "
    "experimental finding. Answer with JSON only."
)
# The marker the simulated model server recognises a judging request by.
JUDGE_QUESTION = "Score how well each hypothesis matches the reference statement."
JUDGE_RUBRIC = (
    "Score each hypothesis on its own, against the reference statement only. Do not reward plausibility, novelty, "
    "style, length or detail, and ignore the other hypotheses and their order.\n\n"
    "Scores:\n"
    "5 - Same finding: the hypothesis makes the reference statement's causal claim, with the same factor or "
    "intervention, the same direction of effect and the same outcome, in a comparable biological system.\n"
    "4 - The same finding with a minor difference: same factor, direction and outcome, but a broader or different "
    "system, or it adds a mechanism the reference statement does not report.\n"
    "3 - The central claim is reached: the hypothesis names the reference statement's key factor and predicts its "
    "effect on the reported outcome in the same direction, even if it states the outcome less precisely or embeds "
    "the claim in a different mechanism.\n"
    "2 - Related, not the finding: the right factor or the right outcome, but not the causal link between them, or "
    "the link is only one of several alternatives the hypothesis leaves open.\n"
    "1 - Same topic only: the same field, pathway or system, with a different factor, outcome or causal claim.\n"
    "0 - Unrelated, or it contradicts the reference statement (an effect in the opposite direction)."
)
JUDGE_FORMAT = (
    'Return a JSON object {"scores": [{"id": "H1", "score": 3, "reason": "one sentence"}]} with every hypothesis '
    'once; "score" is a whole number from 0 to 5.'
)
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "scores": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "score": {"type": "integer"},
                    "reason": {"type": "string"},
                },
                "required": ["id", "score", "reason"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["scores"],
    "additionalProperties": False,
}


def judge_messages(*, question: str, reference_statement: str, items: list[tuple[str, str]]) -> tuple[str, str]:
    """(system, user) of one judging request. items: (label, hypothesis text) in the order shown."""
    hypotheses = "\n\n".join(f"[{label}] {text}" for label, text in items)
    user = (
        f"{JUDGE_QUESTION}\n\n"
        f"RESEARCH QUESTION\n{question}\n\n"
        f"REFERENCE STATEMENT\n{reference_statement}\n\n"
        f"HYPOTHESES\n{hypotheses}\n\n"
        f"{JUDGE_RUBRIC}\n\n{JUDGE_FORMAT}"
    )
    return JUDGE_SYSTEM, user


@dataclass
class JudgeReply:
    """scores: every expected label → (score, reason) or None. `complete`: one valid score for every label."""

    scores: dict[str, tuple[int, str] | None]
    parsed: bool
    complete: bool
    problems: list[str] = field(default_factory=list)


def parse_judge_scores(text: str | None, labels: list[str]) -> JudgeReply:
    """Read {"scores": [{"id", "score", "reason"}]}. A score must be a JSON integer 0–5; a repeated id gives none."""
    scores: dict[str, tuple[int, str] | None] = dict.fromkeys(labels)
    try:
        obj = llm.extract_json(text)
    except llm.ReplyParseError as exc:
        return JudgeReply(scores, parsed=False, complete=False, problems=[f"{exc.kind}: {exc}"])
    items = obj.get("scores") if isinstance(obj, dict) else obj if isinstance(obj, list) else None
    if not isinstance(items, list):
        return JudgeReply(scores, parsed=False, complete=False, problems=["no scores array"])
    problems: list[str] = []
    seen: dict[str, int] = {}
    for position, item in enumerate(items, start=1):
        label = llm.normalize_label(item.get("id")) if isinstance(item, dict) else None
        if label is None or label not in scores:
            problems.append(f"item {position} names no hypothesis of the request")
            continue
        seen[label] = seen.get(label, 0) + 1
        score = item.get("score")
        if isinstance(score, bool) or not isinstance(score, int) or score not in SCORES:
            problems.append(f"{label}: the score {score!r} is not a whole number from 0 to 5")
            continue
        reason = item.get("reason")
        scores[label] = (score, reason.strip() if isinstance(reason, str) else "")
    for label, count in seen.items():
        if count > 1:
            problems.append(f"{label} is scored {count} times")
            scores[label] = None
    problems += [f"{label} has no score" for label in labels if label not in seen]
    complete = all(value is not None for value in scores.values())
    return JudgeReply(scores, parsed=True, complete=complete, problems=problems)


def judge_order(benchmark: BenchmarkSet, benchmark_task: BenchmarkTask, hypotheses: list) -> list:
    """The task's hypotheses in the order every judge sees them: shuffled with the set's seed and the task's key, so
    that the order says nothing of who wrote a hypothesis (imports often list one generator after another)."""
    ordered = sorted(hypotheses, key=lambda h: (h.position, h.pk))
    random.Random(f"{benchmark.seed}:{benchmark_task.task.key}").shuffle(ordered)
    return ordered


# Starting and running the judging ----------------------------------------------------------------------


def judging_start(*, benchmark: BenchmarkSet, user, judges: list[Judge] | None = None) -> list[BackgroundJob]:
    """One background job per model judge (all of the set's by default) that has no job waiting or running.

    People's scores are imported, not asked for; a judge whose job is still unfinished is skipped."""
    with transaction.atomic():
        benchmark = BenchmarkSet.objects.select_for_update().get(pk=benchmark.pk)
        candidates = judges if judges is not None else list(benchmark.judges.all())
        model_judges = [judge for judge in candidates if judge.endpoint_id and judge.benchmark_id == benchmark.pk]
        if not model_judges:
            raise BenchmarkError("The set has no model judge: add a judge with a model endpoint.", code="no_judges")
        if not benchmark.hypotheses.exists():
            raise BenchmarkError("The set has no hypotheses to judge yet.", code="nothing_to_judge")
        busy = {
            job.params.get("judge_id")
            for job in BackgroundJob.objects.filter(
                kind=JOB_KIND, state__in=(BackgroundJob.State.QUEUED, BackgroundJob.State.RUNNING)
            )
        }
        return [
            job_create(kind=JOB_KIND, params={"benchmark_id": benchmark.pk, "judge_id": judge.pk}, user=user)
            for judge in model_judges
            if judge.pk not in busy
        ]


def judging_jobs(*, benchmark: BenchmarkSet) -> list[BackgroundJob]:
    """The set's judging jobs, newest first."""
    return list(
        BackgroundJob.objects.filter(kind=JOB_KIND, params__benchmark_id=benchmark.pk).order_by("-created_at", "-pk")
    )


def judging_job_run(job: BackgroundJob, report_progress: ProgressCallback) -> JobResult:
    """The background job of one model judge: score every hypothesis of the set that it has not scored yet."""
    judge = (
        Judge.objects.select_related("endpoint", "benchmark")
        .filter(pk=job.params.get("judge_id"), benchmark_id=job.params.get("benchmark_id"))
        .first()
    )
    if judge is None:
        raise JobError("The judge or its set no longer exists.")
    if judge.endpoint is None:
        raise JobError(f"{judge.name} is a person: import their scores instead.")
    benchmark = judge.benchmark
    total = benchmark.hypotheses.count()
    done = JudgeScore.objects.filter(judge=judge).count()
    report_progress(done, total)
    unscored = 0
    for benchmark_task in benchmark.benchmark_tasks.select_related("task").order_by("position", "pk"):
        waiting = list(
            BenchmarkHypothesis.objects.filter(benchmark_task=benchmark_task)
            .exclude(judge_scores__judge=judge)
            .select_related("hypothesis")
        )
        waiting = judge_order(benchmark, benchmark_task, waiting)
        for start in range(0, len(waiting), JUDGE_BATCH):
            batch = waiting[start : start + JUDGE_BATCH]
            written = _judge_batch(judge, benchmark_task, batch)
            done += written
            unscored += len(batch) - written
            report_progress(done, total)
    if unscored:
        raise JobError(
            f"{judge.name} gave no usable score for {unscored} hypotheses after being asked twice; the other scores "
            "are kept. Start the judging again to ask for the missing ones."
        )
    return _scores_file(job, judge)


def _text_of(hypothesis: BenchmarkHypothesis) -> str:
    source = hypothesis.hypothesis or hypothesis
    return hypothesis_text(source.statement, source.mechanism, source.prediction)


def _judge_batch(judge: Judge, benchmark_task: BenchmarkTask, batch: list[BenchmarkHypothesis]) -> int:
    """Ask the judge about one batch (with one "ask once more") and record its scores; returns how many."""
    endpoint = judge.endpoint
    assert endpoint is not None  # only a model judge is asked (judging_job_run refuses a person)
    labels = [f"H{number}" for number in range(1, len(batch) + 1)]
    task = benchmark_task.task
    system, user = judge_messages(
        question=task.question,
        reference_statement=task.reference_statement,
        items=[(label, _text_of(hypothesis)) for label, hypothesis in zip(labels, batch, strict=True)],
    )
    reply, call = ask_twice(
        lambda text: parse_judge_scores(text, labels),
        endpoint=endpoint,
        system=system,
        user=user,
        purpose=PURPOSE,
        json_schema=JUDGE_SCHEMA,
    )
    if reply is None:
        logger.warning("Judge %s gave no usable reply for task %s", judge.name, task.key)
        return 0
    scores = [
        JudgeScore(judge=judge, hypothesis=hypothesis, score=value[0], reason=value[1], model_call=call)
        for label, hypothesis in zip(labels, batch, strict=True)
        if (value := reply.scores[label]) is not None
    ]
    with transaction.atomic():
        # A score already there (another delivery of the job got there first) is kept, never duplicated.
        JudgeScore.objects.bulk_create(scores, ignore_conflicts=True)
        benchmark_set_touch(benchmark_id=judge.benchmark_id)
    return len(scores)


def _scores_file(job: BackgroundJob, judge: Judge) -> JobResult:
    """The judge's scores as a CSV in the import format (task, hypothesis, judge, judge_company, score, reason).

    The task and hypothesis ids are written as they are, so that the file imports again; free text is made safe
    for spreadsheets."""
    final = exports_dir() / f"job-{job.pk}-judge-scores.csv"
    partial = final.with_name(final.name + ".part")
    rows = (
        JudgeScore.objects.filter(judge=judge)
        .order_by("hypothesis__benchmark_task__position", "hypothesis__position", "hypothesis__pk")
        .values_list("hypothesis__benchmark_task__task__key", "hypothesis__key", "score", "reason")
    )
    with open(partial, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["task", "hypothesis", "judge", "judge_company", "score", "reason"])
        for task_key, key, score, reason in rows.iterator(chunk_size=2000):
            writer.writerow(
                [
                    task_key,
                    key,
                    spreadsheet_text(judge.name),
                    spreadsheet_text(judge.company),
                    score,
                    spreadsheet_text(reason),
                ]
            )
    Path(partial).replace(final)
    name = f"{slugify(judge.benchmark.name) or 'set'}-{slugify(judge.name) or 'judge'}-scores.csv"
    return JobResult(path=final, name=name)
