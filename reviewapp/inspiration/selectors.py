"""Reads of the inspiration room: the populations it audits (from the review, screening and benchmark rooms), the
groups and their cutoffs, the corpus an audit searched, and an audit's counts and items."""

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from django.db.models import Q, QuerySet
from django.urls import reverse

from literature.hooks import ReferenceUse
from literature.models import Reference
from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet
from reviewapp.core.errors import NotFound, ServiceError, problem
from reviewapp.inspiration.cutoffs import Cutoff
from reviewapp.inspiration.models import InspirationAudit, InspirationCutoff, InspirationItem, InspirationJudgment
from reviewapp.models import Cohort, Proposal
from screening.models import Hypothesis, Run
from screening.prompts import hypothesis_text

NO_GROUP = "(no generator recorded)"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FINGERPRINT_CHUNK = 5000


@dataclass(frozen=True)
class Version:
    """One hypothesis version of a population, as an audit reads it."""

    label: str
    group: str
    domain: str
    text: str
    title: str
    proposal_id: int | None = None
    run_hypothesis_id: int | None = None
    benchmark_hypothesis_id: int | None = None


def first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0] if text.strip() else ""


def _proposal_text(proposal: Proposal) -> str:
    """The scientific sections of a proposal, in the order people read them, each labelled as in the protocol's
    hypothesis text; empty ones left out, and citations too (they name other work, not the hypothesis)."""
    parts = [proposal.statement.strip()]
    for label, value in (
        ("Mechanism", proposal.mechanism),
        ("Prediction", proposal.prediction),
        ("Investigation plan", proposal.investigation_plan),
        ("Data requirements", proposal.data_requirements),
        ("Alternative explanations", proposal.alternative_explanations),
    ):
        if value.strip():
            parts.append(f"{label}: {value.strip()}")
    return " ".join(parts)


def _run_group(hypothesis: Hypothesis) -> str:
    if hypothesis.author_endpoint is not None:
        return hypothesis.author_endpoint.display_name
    return hypothesis.author_name or NO_GROUP


def cohort_versions(cohort: Cohort) -> list[Version]:
    proposals = cohort.proposals.order_by("external_id")
    return [
        Version(
            label=proposal.external_id,
            group=proposal.author or NO_GROUP,
            domain=proposal.domain_category,
            text=_proposal_text(proposal),
            title=first_sentence(proposal.statement),
            proposal_id=proposal.pk,
        )
        for proposal in proposals
    ]


def run_versions(runs: Iterable[Run]) -> list[Version]:
    versions = []
    for run in runs:
        hypotheses = run.hypotheses.select_related("author_endpoint").order_by("position", "source", "source_index")
        for hypothesis in hypotheses:
            name = hypothesis.label or f"{hypothesis.source}-{hypothesis.source_index}"
            versions.append(
                Version(
                    label=f"{run.public_id}/{name}",
                    group=_run_group(hypothesis),
                    domain=hypothesis.domain_category,
                    text=hypothesis_text(hypothesis.statement, hypothesis.mechanism, hypothesis.prediction),
                    title=first_sentence(hypothesis.statement),
                    run_hypothesis_id=hypothesis.pk,
                )
            )
    return versions


def benchmark_versions(benchmark: BenchmarkSet) -> list[Version]:
    entries = BenchmarkHypothesis.objects.filter(benchmark=benchmark).select_related(
        "benchmark_task__task", "hypothesis__author_endpoint"
    )
    versions = []
    for entry in entries:
        source = entry.hypothesis
        if source is not None:
            group, domain = _run_group(source), source.domain_category
            statement, mechanism, prediction = source.statement, source.mechanism, source.prediction
        else:
            group, domain = entry.generator or NO_GROUP, ""
            statement, mechanism, prediction = entry.statement, entry.mechanism, entry.prediction
        versions.append(
            Version(
                label=f"{entry.benchmark_task.task.key}/{entry.key}",
                group=group,
                domain=domain,
                text=hypothesis_text(statement, mechanism, prediction),
                title=first_sentence(statement),
                benchmark_hypothesis_id=entry.pk,
            )
        )
    return versions


def groups_known() -> list[str]:
    """Every generator the populations name: proposals' authors, run hypotheses' models, benchmark generators."""
    groups = set(Proposal.objects.exclude(author="").values_list("author", flat=True).distinct())
    groups |= set(
        Hypothesis.objects.filter(author_endpoint__isnull=False)
        .values_list("author_endpoint__display_name", flat=True)
        .distinct()
    )
    groups |= set(
        Hypothesis.objects.filter(author_endpoint__isnull=True)
        .exclude(author_name="")
        .values_list("author_name", flat=True)
        .distinct()
    )
    groups |= set(BenchmarkHypothesis.objects.exclude(generator="").values_list("generator", flat=True).distinct())
    return sorted(groups)


def cutoffs_by_group() -> dict[str, InspirationCutoff]:
    return {cutoff.group: cutoff for cutoff in InspirationCutoff.objects.all()}


# The corpus an audit searched ----------------------------------------------------------------------------------


def coarse_references(cutoff: Cutoff, window_end: date | None) -> Q:
    """The references whose date is too coarse for the cutoff (inside the window)."""
    condition = Q(pk__in=[])
    for precision, first_day in cutoff.coarse_periods():
        condition |= Q(published_precision=precision, published=first_day)
    return condition & Q(published__lte=window_end) if window_end else condition


def corpus_snapshot(cutoffs: dict[str, Cutoff], window_start: date | None, window_end: date | None) -> dict:
    """The corpus as retrieval finds it: its size, a fingerprint of every reference's content, the publication window
    with the references inside it (those whose period starts within it), and the references left out as "date too
    coarse" per group and in all. `cutoffs` are the groups' bounds within the window (cutoffs.within_window)."""
    digest = hashlib.sha256()
    rows = Reference.objects.order_by("pk").values_list("pk", "source", "source_id", "content_sha256")
    for pk, source, source_id, content in rows.iterator(chunk_size=_FINGERPRINT_CHUNK):
        digest.update(f"{pk}\x1f{source}\x1f{source_id}\x1f{content}\x1e".encode())
    any_coarse = Q(pk__in=[])
    by_group = {}
    for group, cutoff in cutoffs.items():
        condition = coarse_references(cutoff, window_end)
        by_group[group] = Reference.objects.filter(condition).count()
        any_coarse |= condition
    in_window = Reference.objects.filter(published__isnull=False)
    if window_start:
        in_window = in_window.filter(published__gte=window_start)
    if window_end:
        in_window = in_window.filter(published__lte=window_end)
    return {
        "references": Reference.objects.count(),
        "dated": Reference.objects.filter(published__isnull=False).count(),
        "fingerprint": digest.hexdigest(),
        "window_start": window_start.isoformat() if window_start else None,
        "window_end": window_end.isoformat() if window_end else None,
        "in_window": in_window.count(),
        "date_too_coarse": Reference.objects.filter(any_coarse).count(),
        "date_too_coarse_by_group": by_group,
    }


# An audit's counts ---------------------------------------------------------------------------------------------


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _tally(rows: list) -> dict:
    counts: dict = {"versions": len(rows), "retrieved": 0, "judged": 0, "failed": 0, "positive": 0, "negative": 0}
    counts.update(unverified=0, pending=0)
    for row in rows:
        if not row["retrieved"]:
            continue
        counts["retrieved"] += 1
        outcome = row["judgment__judgment"]
        if outcome in (InspirationJudgment.Judgment.POSITIVE, InspirationJudgment.Judgment.NEGATIVE):
            counts["judged"] += 1
            counts[outcome] += 1
            if outcome == "negative" and row["judgment__judged"] == "positive":
                counts["unverified"] += 1
        elif outcome == InspirationJudgment.Judgment.FAILED:
            counts["failed"] += 1
        else:
            counts["pending"] += 1
    counts["rate"] = _share(counts["positive"], counts["versions"])
    counts["retrieval_coverage"] = _share(counts["retrieved"], counts["versions"])
    counts["positive_given_retrieved"] = _share(counts["positive"], counts["retrieved"])
    return counts


def _title_diagnostic(rows: list) -> dict:
    with_title = sum(1 for row in rows if row["title_retrieved"])
    with_text = sum(1 for row in rows if row["retrieved"])
    return {
        "versions": len(rows),
        "retrieved_with_text": with_text,
        "retrieved_with_title": with_title,
        "change": with_title - with_text,
        "coverage_with_text": _share(with_text, len(rows)),
        "coverage_with_title": _share(with_title, len(rows)),
    }


def audit_report(audit: InspirationAudit) -> dict:
    """Every count of the audit: overall, per group and per domain category (docs/protocol.md#inspiration-audit).
    The rate's denominator is every version; descriptive figures only, counts beside every share."""
    rows = list(
        InspirationItem.objects.filter(audit=audit)
        .order_by("position")
        .values("group", "domain", "retrieved", "title_retrieved", "judgment__judgment", "judgment__judged")
    )
    by_group: dict[str, list] = defaultdict(list)
    by_domain: dict[str, list] = defaultdict(list)
    for row in rows:
        by_group[row["group"]].append(row)
        by_domain[row["domain"]].append(row)
    totals = _tally(rows)
    coarse = audit.corpus.get("date_too_coarse_by_group", {})
    report = {
        "totals": {
            **{name: totals[name] for name in ("versions", "retrieved", "judged", "failed", "positive", "negative")},
            "unverified": totals["unverified"],
            "pending": totals["pending"],
            "date_too_coarse": audit.corpus.get("date_too_coarse", 0),
            "judgments": audit.judgments.count(),
            "replayed": audit.judgments.filter(replayed_from__isnull=False).count(),
        },
        "rate": totals["rate"],
        "retrieval_coverage": totals["retrieval_coverage"],
        "positive_given_retrieved": totals["positive_given_retrieved"],
        "by_group": [
            {
                "group": group,
                # Every group's cutoff is recorded when the audit starts (audit_create refuses one without).
                "cutoff": audit.cutoffs[group]["cutoff"],
                "precision": audit.cutoffs[group]["precision"],
                "date_too_coarse": coarse.get(group, 0),
                **_tally(group_rows),
            }
            for group, group_rows in sorted(by_group.items())
        ],
        "by_domain": [{"domain": domain, **_tally(domain_rows)} for domain, domain_rows in sorted(by_domain.items())],
        "title_diagnostic": None,
        "replay": replay_check(audit),
    }
    if audit.title_diagnostic:
        report["title_diagnostic"] = {
            **_title_diagnostic(rows),
            "by_group": [
                {"group": group, **_title_diagnostic(group_rows)} for group, group_rows in sorted(by_group.items())
            ],
        }
    return report


def replay_check(audit: InspirationAudit) -> dict | None:
    """For an audit that replays another's judgements: whether it searched the same corpus (the fingerprints of the
    two snapshots), with a warning when it did not; None for an audit that replays nothing. Unknown (None) until
    both snapshots exist."""
    if audit.replay_of_id is None:
        return None
    original = InspirationAudit.objects.filter(pk=audit.replay_of_id).values_list("corpus", flat=True).first() or {}
    corpus = audit.corpus or {}
    then, now = original.get("fingerprint") or "", corpus.get("fingerprint") or ""
    # The publication window is part of what was searched (a snapshot without one had none).
    window_then = (original.get("window_start"), original.get("window_end"))
    window_now = (corpus.get("window_start"), corpus.get("window_end"))
    matches = None if not (then and now) else then == now and window_then == window_now
    warning = ""
    if then and now and then == now and window_then != window_now:
        warning = (
            f"The publication window differs from audit {audit.replay_of_id}'s ({_window_text(*window_then)} then, "
            f"{_window_text(*window_now)} now): retrieval may find other references, so the numbers can differ from "
            "the replayed audit's."
        )
    elif matches is False:
        warning = (
            f"The corpus differs from the one audit {audit.replay_of_id} searched ({original.get('references')} "
            f"references then, {audit.corpus.get('references')} now; fingerprint {then[:12]}… then, {now[:12]}… now): "
            "its judgements are reused only where the same text meets the same reference content, and retrieval may "
            "find other references, so the numbers can differ from the replayed audit's."
        )
    return {
        "of": audit.replay_of_id,
        "replayed_fingerprint": then or None,
        "corpus_matches": matches,
        "warning": warning,
    }


def _window_text(start: str | None, end: str | None) -> str:
    return f"{start or 'open'} to {end or 'open'}"


def audit_summary(audit: InspirationAudit) -> dict:
    """The stored counts of a finished audit; counted now for one still running."""
    return audit.summary if audit.summary is not None else audit_report(audit)


def item_outcome(item: InspirationItem) -> str:
    """not_retrieved, positive, negative, failed, or pending (retrieved, not judged yet)."""
    if not item.retrieved:
        return "not_retrieved"
    if item.judgment is None or not item.judgment.judgment:
        return "pending"
    return item.judgment.judgment


def audit_items(audit: InspirationAudit, *, group: str = "", outcome: str = ""):
    """The audit's items with their candidate and judgement, in population order (a queryset, for paging)."""
    items = (
        InspirationItem.objects.filter(audit=audit)
        .select_related("candidate", "judgment")
        .defer("text", "candidate__raw", "candidate__abstract", "judgment__hypothesis_text")
        .order_by("position")
    )
    if group:
        items = items.filter(group=group)
    if outcome == "not_retrieved":
        items = items.filter(retrieved=False)
    elif outcome in InspirationJudgment.Judgment.values:
        items = items.filter(retrieved=True, judgment__judgment=outcome)
    elif outcome == "pending":
        items = items.filter(retrieved=True).filter(Q(judgment__isnull=True) | Q(judgment__judgment=""))
    return items


def audits_recent(*, limit: int | None = 50) -> list[InspirationAudit]:
    return list(InspirationAudit.objects.select_related("cohort", "benchmark", "created_by")[:limit])


def audit_population_label(audit: InspirationAudit) -> str:
    if audit.population == InspirationAudit.Population.COHORT:
        return f"cohort {audit.cohort.name}" if audit.cohort else "a deleted cohort"
    if audit.population == InspirationAudit.Population.BENCHMARK:
        return f"benchmark set {audit.benchmark.name}" if audit.benchmark else "a deleted benchmark set"
    count = audit.runs.count()
    return f"{count} screening run{'s' if count != 1 else ''}"


def reference_uses(reference_ids: Iterable[int]) -> dict[int, list[ReferenceUse]]:
    """The audits whose versions had these references as best candidate (registered with the literature room)."""
    rows = (
        InspirationItem.objects.filter(candidate_id__in=list(reference_ids))
        .values("candidate_id", "audit_id", "retrieved", "judgment__judgment")
        .order_by("-audit_id")
    )
    per_audit: dict[tuple[int, int], dict] = {}
    for row in rows:
        entry = per_audit.setdefault((row["candidate_id"], row["audit_id"]), {"best": 0, "gated": 0, "positive": 0})
        entry["best"] += 1
        entry["gated"] += row["retrieved"]
        entry["positive"] += row["retrieved"] and row["judgment__judgment"] == "positive"
    uses: dict[int, list[ReferenceUse]] = defaultdict(list)
    for (reference_id, audit_id), entry in per_audit.items():
        detail = (
            f"best candidate of {entry['best']} version(s); {entry['gated']} passed the lexical gate, "
            f"{entry['positive']} judged positive"
        )
        uses[reference_id].append(
            ReferenceUse(
                kind="Inspiration audit",
                label=f"Inspiration audit {audit_id}",
                url=reverse("inspiration-audit", args=[audit_id]),
                detail=detail,
            )
        )
    return dict(uses)


def audit_population(data: dict) -> dict:
    """The audit_create keywords of a validated audit request (reviewapp.inspiration.api.AuditInput): the records it
    names, or a refusal naming the one that does not exist."""
    values: dict = {
        "window_start": data.get("window_start"),
        "window_end": data.get("window_end"),
        "title_diagnostic": data.get("title_diagnostic", False),
    }
    if data.get("cohort") is not None:
        values["cohort"] = Cohort.objects.filter(pk=data["cohort"]).first()
        if values["cohort"] is None:
            raise ServiceError(f"No cohort has the id {data['cohort']}.", code="unknown_cohort")
    if data.get("benchmark") is not None:
        values["benchmark"] = BenchmarkSet.objects.filter(pk=data["benchmark"]).first()
        if values["benchmark"] is None:
            raise ServiceError(f"No benchmark set has the id {data['benchmark']}.", code="unknown_benchmark")
    if data.get("runs"):
        wanted = list(dict.fromkeys(data["runs"]))
        runs = {run.public_id: run for run in Run.objects.filter(public_id__in=wanted)}
        unknown = [str(run_id) for run_id in wanted if run_id not in runs]
        if unknown:
            raise ServiceError(
                f"No run has the id {', '.join(unknown)}.",
                code="unknown_run",
                problems=[problem(f"No run has the id {run_id}.", field="runs") for run_id in unknown],
            )
        values["runs"] = [runs[run_id] for run_id in wanted]
    if data.get("replay") is not None:
        values["replay_of"] = InspirationAudit.objects.filter(pk=data["replay"]).first()
        if values["replay_of"] is None:
            raise ServiceError(f"No audit has the id {data['replay']}.", code="unknown_audit")
    return values


def cutoff_list() -> QuerySet[InspirationCutoff]:
    """Every group's cutoff."""
    return InspirationCutoff.objects.all()


def audit_run_ids(audit: InspirationAudit) -> list:
    """The public ids of the runs an audit of runs covers."""
    return list(audit.runs.values_list("public_id", flat=True))


def audit_get(*, audit_id: int) -> InspirationAudit:
    """One audit with its cohort and benchmark set; NotFound when there is none."""
    audit = InspirationAudit.objects.select_related("cohort", "benchmark").filter(pk=audit_id).first()
    if audit is None:
        raise NotFound(f"There is no audit {audit_id}.")
    return audit


def audit_population_choices() -> dict:
    """What an audit can cover, for the form: the cohorts and the benchmark sets, by name."""
    return {"cohorts": Cohort.objects.order_by("name"), "benchmarks": BenchmarkSet.objects.order_by("name")}
