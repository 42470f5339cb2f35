"""Reads for the analysis of a cohort's human review: revision outcomes, reviewer agreement and each author's
criterion profile (docs/protocol.md#revision-analysis, docs/protocol.md#reviewer-agreement,
docs/protocol.md#criterion-profiles)."""

from collections import defaultdict
from dataclasses import dataclass

from reviewapp import analysis
from reviewapp.models import Cohort, Proposal, Review
from reviewapp.protocol import CANT_JUDGE, CRITERION_FIELDS
from reviewapp.selectors.revisions import first_parents


@dataclass(frozen=True)
class CohortReviewAnalysis:
    cohort: Cohort
    submitted_reviews: int
    revisions: analysis.RevisionOutcomes
    revision_pairs: int  # predecessor → child pairs with both in the cohort
    revisions_by_criterion: dict[str, analysis.RevisionOutcomes]  # the same pairs on each criterion's mean (1–4)
    # Every parent→child edge with both in the cohort (a crossover's every parent: the transitions), kept beside the
    # first-listed-parent figures above (docs/protocol.md#transitions).
    edge_revisions: analysis.RevisionOutcomes
    edge_pairs: int
    agreement: tuple[analysis.ReviewerAgreement, ...]  # overall, then the six criteria, then the recommendation
    profiles: tuple[analysis.AuthorProfile, ...]  # per author: overall and the six criteria, with task intervals
    profile_resamples: int
    profile_seed: int


REVIEW_AGREEMENT_FIELDS = ("overall", *CRITERION_FIELDS, "recommendation", "flaw_verdict")
# The scores of a criterion profile: the overall value (1–5) and the six criteria (1–4).
PROFILE_FIELDS = ("overall", *CRITERION_FIELDS)
# Whole research tasks resampled for the profiles' intervals (docs/protocol.md#criterion-profiles).
PROFILE_RESAMPLES = analysis.DEFAULT_RESAMPLES
PROFILE_SEED = analysis.DEFAULT_SEED
NO_AUTHOR = "(no author recorded)"


def cohort_review_analysis(cohort: Cohort) -> CohortReviewAnalysis:
    """Revision outcomes of predecessor → child pairs (the mean overall score of each proposal's submitted reviews in
    the cohort, and the mean of each criterion without "can't judge") and reviewer agreement per criterion, from the
    cohort's submitted reviews. A child's predecessor is its first listed parent; the pair counts when both are in
    the cohort."""
    reviews = list(
        Review.objects.filter(assignment__cohort=cohort, status=Review.Status.SUBMITTED).values(
            "assignment__proposal_id",
            "assignment__proposal__task__key",
            "assignment__proposal__author",
            *REVIEW_AGREEMENT_FIELDS,
        )
    )
    overall = defaultdict(list)
    criteria: dict[str, dict[int, list[int]]] = {criterion: defaultdict(list) for criterion in CRITERION_FIELDS}
    for review in reviews:
        review["proposal"] = review.pop("assignment__proposal_id")
        review["task"] = review.pop("assignment__proposal__task__key")
        review["author"] = review.pop("assignment__proposal__author") or NO_AUTHOR
        overall[review["proposal"]].append(review["overall"])
        for criterion in CRITERION_FIELDS:
            if review[criterion] and review[criterion] != CANT_JUDGE:
                criteria[criterion][review["proposal"]].append(int(review[criterion]))
    members = set(cohort.proposals.values_list("pk", flat=True))
    predecessors = first_parents(child_ids=cohort.proposals.values("pk"))
    authors = dict(Proposal.objects.filter(pk__in=predecessors).values_list("pk", "author"))
    links = sorted((parent, child, authors[child]) for child, parent in predecessors.items() if parent in members)

    every_edge = Proposal.parents.through.objects.filter(from_proposal__in=members, to_proposal__in=members)
    child_authors = dict(Proposal.objects.filter(pk__in=members).values_list("pk", "author"))
    edges = sorted(
        (parent, child, child_authors[child])
        for child, parent in every_edge.values_list("from_proposal_id", "to_proposal_id")
    )

    def pairs_of(scores, pairs=None) -> list:
        return [
            (parent, child, author, scores.get(parent, []), scores.get(child, []))
            for parent, child, author in (links if pairs is None else pairs)
        ]

    return CohortReviewAnalysis(
        cohort=cohort,
        submitted_reviews=len(reviews),
        revisions=analysis.revision_outcomes(pairs_of(overall)),
        revision_pairs=len(links),
        edge_revisions=analysis.revision_outcomes(pairs_of(overall, edges)),
        edge_pairs=len(edges),
        revisions_by_criterion={
            criterion: analysis.revision_outcomes(pairs_of(criteria[criterion])) for criterion in CRITERION_FIELDS
        },
        agreement=tuple(analysis.reviewer_agreement(reviews, field) for field in REVIEW_AGREEMENT_FIELDS),
        profiles=analysis.criterion_profiles(
            reviews, PROFILE_FIELDS, resamples=PROFILE_RESAMPLES, seed=PROFILE_SEED, cant_judge=CANT_JUDGE
        ),
        profile_resamples=PROFILE_RESAMPLES,
        profile_seed=PROFILE_SEED,
    )
