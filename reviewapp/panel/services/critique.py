"""Pairwise critique and its ratings (docs/protocol.md#pairwise-critique).

A cohort's comparisons form one log in update order (`seq`). Appending takes the cohort's RatingLog row lock, gives
each comparison the next number and applies it to the stored ratings at once, so the stored ratings are always the
online replay of the log; `ratings_recompute` replays the whole log and gives the same numbers. Comparisons come from
the critique model (a background job that picks informative pairs round by round) or are imported.
"""

from collections import Counter
from functools import partial

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from reviewapp.core.errors import as_problems, problem
from reviewapp.models import BackgroundJob, Cohort
from reviewapp.panel import prompts
from reviewapp.panel import ratings as trueskill_rules
from reviewapp.panel.figures import comparisons_table
from reviewapp.panel.models import Comparison, Rating, RatingLog
from reviewapp.panel.selectors import CRITIQUE_JOB, cohort_ratings, comparison_log
from reviewapp.panel.services.common import (
    Answerer,
    PanelError,
    Progress,
    ask_model,
    concurrency_for,
    role_endpoints,
    run_concurrently,
    stored_prompt,
    write_table_file,
)
from reviewapp.selectors.packets import proposal_packets
from reviewapp.services.jobs import JobError, JobResult, ProgressCallback, job_create

PURPOSE_CRITIQUE = "panel_critique"
MAX_PER_PROPOSAL = 200


# The log and the ratings ------------------------------------------------------------------------------------------


def comparisons_append(*, cohort: Cohort, entries: list[dict], user=None) -> list[Comparison]:
    """Append comparisons (dicts of Comparison fields with a_id, b_id and outcome) in the given order, and apply each
    to the stored ratings. One transaction under the cohort's log lock."""
    with transaction.atomic():
        log, _ = RatingLog.objects.get_or_create(cohort=cohort)
        log = RatingLog.objects.select_for_update().get(pk=log.pk)
        involved = {entry[side] for entry in entries for side in ("a_id", "b_id")}
        current = {
            rating.proposal_id: trueskill_rules.Rating(rating.mu, rating.sigma, rating.comparisons)
            for rating in Rating.objects.filter(cohort=cohort, proposal__in=involved)
        }
        updated = trueskill_rules.replay(
            [(entry["a_id"], entry["b_id"], entry["outcome"]) for entry in entries], start=current
        )
        comparisons = [
            Comparison(cohort=cohort, seq=log.last_seq + number, created_by=user, **entry)
            for number, entry in enumerate(entries, start=1)
        ]
        Comparison.objects.bulk_create(comparisons)
        _ratings_save(cohort, {pk: updated[pk] for pk in updated if pk in involved})
        log.last_seq += len(entries)
        log.save(update_fields=["last_seq", "updated_at"])
    return comparisons


def _ratings_save(cohort: Cohort, ratings: dict[int, trueskill_rules.Rating]) -> None:
    Rating.objects.bulk_create(
        [
            Rating(cohort=cohort, proposal_id=pk, mu=rating.mu, sigma=rating.sigma, comparisons=rating.comparisons)
            for pk, rating in ratings.items()
        ],
        update_conflicts=True,
        unique_fields=["cohort", "proposal"],
        update_fields=["mu", "sigma", "comparisons"],
        batch_size=1000,
    )


def ratings_recompute(*, cohort: Cohort) -> int:
    """Replay the cohort's whole log from the priors and store the result; returns the comparisons replayed."""
    with transaction.atomic():
        log, _ = RatingLog.objects.get_or_create(cohort=cohort)
        log = RatingLog.objects.select_for_update().get(pk=log.pk)
        rows = list(Comparison.objects.filter(cohort=cohort).order_by("seq").values_list("a_id", "b_id", "outcome"))
        ratings = trueskill_rules.replay(rows)
        Rating.objects.filter(cohort=cohort).exclude(proposal__in=list(ratings)).delete()
        _ratings_save(cohort, ratings)
        log.recomputed_at = timezone.now()
        log.save(update_fields=["recomputed_at", "updated_at"])
    return len(rows)


def comparisons_import(*, cohort: Cohort, rows: list[dict], user) -> list[Comparison]:
    """Comparisons made by people or other tools: [{"a", "b", "outcome"}] with the proposals' imported ids, in the
    order they are to be applied. Every row is checked first; any problem stores nothing and names the rows."""
    members = {
        external_id: (pk, task)
        for external_id, pk, task in cohort.proposals.values_list("external_id", "pk", "task_id")
    }
    problems, entries = [], []
    for number, row in enumerate(rows, start=1):
        a, b = members.get(row["a"]), members.get(row["b"])
        for side, found in (("a", a), ("b", b)):
            if found is None:
                problems.append(
                    {"row": number, "field": side, "message": f"“{row[side]}” is not a proposal of this cohort."}
                )
        if a is None or b is None:
            continue
        if a[0] == b[0]:
            problems.append({"row": number, "field": "b", "message": "A proposal cannot be compared with itself."})
        elif a[1] != b[1]:
            problems.append(
                {
                    "row": number,
                    "field": "b",
                    "message": "The two proposals answer different research tasks: comparisons stay within a task.",
                }
            )
        else:
            entries.append({"a_id": a[0], "b_id": b[0], "outcome": row["outcome"], "source": Comparison.Source.IMPORT})
    if problems:
        raise PanelError(
            "The comparisons were not stored: some rows are not valid.",
            code="invalid_comparisons",
            problems=as_problems(problems),
        )
    return comparisons_append(cohort=cohort, entries=entries, user=user)


# The critique job -------------------------------------------------------------------------------------------------


def critique_start(*, cohort: Cohort, per_proposal: int, seed: int, repeat: bool = False, user) -> BackgroundJob:
    """Ask the critique model about informative pairs until each proposal took part in `per_proposal` comparisons of
    this job (or no pair is left). `repeat` allows pairs compared before."""
    role_endpoints([prompts.CRITIC])
    if not 1 <= per_proposal <= MAX_PER_PROPOSAL:
        raise PanelError(f"per_proposal must be between 1 and {MAX_PER_PROPOSAL}.", code="invalid_budget")
    with transaction.atomic():
        Cohort.objects.select_for_update().filter(pk=cohort.pk).first()
        running = BackgroundJob.objects.filter(
            kind=CRITIQUE_JOB,
            params__cohort_id=cohort.pk,
            state__in=(BackgroundJob.State.QUEUED, BackgroundJob.State.RUNNING),
        ).first()
        if running is not None:
            raise PanelError(
                f"Pairwise critique is already running for this cohort; wait for its job ({running.pk}) to finish.",
                code="critique_running",
                status=409,
                problems=[problem(f"Job {running.pk} is still at work.", field="job")],
            )
        params = {"cohort_id": cohort.pk, "per_proposal": per_proposal, "seed": seed, "repeat": repeat}
        return job_create(kind=CRITIQUE_JOB, params=params, user=user)


def _expected_comparisons(strata: dict[int, list[int]], per_proposal: int, repeat: bool) -> int:
    """About how many comparisons a job will ask for: each stratum's budget, capped by its distinct pairs."""
    total = 0
    for members in strata.values():
        size = len(members)
        wanted = per_proposal * size // 2
        total += wanted if repeat else min(wanted, size * (size - 1) // 2)
    return total


def _critique_pair(
    pair: tuple[int, int], *, answers: dict, packets: dict, answerer: Answerer, seed: int, asked: dict
) -> None:
    """Ask the critique model about one pair in its recorded random order; answers[pair] is the log entry (in terms
    of the proposals) or None when no valid reply came after asking twice."""
    a, b = pair
    first, second = (a, b) if trueskill_rules.shown_first(seed, a, b, asked[pair]) else (b, a)
    system, user = prompts.critique_messages(packets[first], packets[second], grok=answerer.endpoint.is_grok)
    reading, call, _error = ask_model(
        prompts.parse_critique, answerer, system, user, PURPOSE_CRITIQUE, prompts.CRITIQUE_SCHEMA
    )
    if reading is None:
        answers[pair] = None
        return
    preference = reading.value["preference"]
    winner = {"a": first, "b": second}.get(preference)  # the model answers in positions A and B
    answers[pair] = {
        "a_id": a,
        "b_id": b,
        "outcome": preference if winner is None else ("a" if winner == a else "b"),
        "source": Comparison.Source.MODEL,
        "shown_first_id": first,
        "order_seed": seed,
        "rationale": reading.value["rationale"],
        **answerer.record(call),
    }


def critique_job_run(job: BackgroundJob, report_progress: ProgressCallback) -> JobResult:
    """Rounds of disjoint pairs, the most informative first (close s, large σ): each round's pairs are asked at
    once, their outcomes appended in the round's order, the ratings updated, then the next round is chosen. Every
    round spends budget, so the job ends."""
    cohort = Cohort.objects.filter(pk=job.params.get("cohort_id")).first()
    if cohort is None:
        raise JobError("The cohort no longer exists.")
    per_proposal, seed, repeat = job.params["per_proposal"], job.params["seed"], bool(job.params.get("repeat"))
    try:
        answerer = Answerer(role_endpoints([prompts.CRITIC])[prompts.CRITIC], stored_prompt(prompts.CRITIC))
    except PanelError as exc:
        raise JobError(exc.message) from exc
    ratings = cohort_ratings(cohort)
    packets = proposal_packets(proposal_ids=[pk for members in ratings.strata.values() for pk in members])
    current = {
        pk: trueskill_rules.Rating(row.mu, row.sigma, row.comparisons) for pk, row in ratings.by_proposal.items()
    }
    budget = dict.fromkeys(packets, per_proposal)
    compared = {frozenset(pair) for pair in Comparison.objects.filter(cohort=cohort).values_list("a_id", "b_id")}
    asked: Counter = Counter()
    progress = Progress(report_progress, _expected_comparisons(ratings.strata, per_proposal, repeat))
    failed = 0
    while pairs := trueskill_rules.next_pairs(
        ratings.strata, current, budget_left=budget, compared=compared, repeat=repeat
    ):
        answers: dict[tuple[int, int], dict | None] = {}
        occurrences = {pair: asked[frozenset(pair)] for pair in pairs}
        run_concurrently(
            pairs,
            partial(_critique_pair, answers=answers, packets=packets, answerer=answerer, seed=seed, asked=occurrences),
            workers=concurrency_for([answerer.endpoint]),
        )
        entries = [entry for pair in pairs if (entry := answers.get(pair)) is not None]
        failed += len(pairs) - len(entries)
        if entries:
            comparisons_append(cohort=cohort, entries=entries)
            current = trueskill_rules.replay(
                [(entry["a_id"], entry["b_id"], entry["outcome"]) for entry in entries], start=current
            )
        for a, b in pairs:
            budget[a] -= 1
            budget[b] -= 1
            compared.add(frozenset((a, b)))
            asked[frozenset((a, b))] += 1
        progress.advance(len(pairs))
    if failed and failed == progress.done:
        raise JobError(
            f"The critique model gave no valid reply to any of {failed} comparisons (each asked twice). Check the "
            "roster's critique endpoint and start again."
        )
    return _log_file(job, cohort)


def _log_file(job: BackgroundJob, cohort: Cohort) -> JobResult:
    """The cohort's whole comparison log as a CSV, in update order."""
    rows = comparisons_table(comparison_log(cohort))
    return write_table_file(job, rows, kind="comparisons", name=f"{slugify(cohort.name) or 'cohort'}-comparisons.csv")
