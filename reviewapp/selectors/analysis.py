"""Reads for the analysis of a cohort's human review: revision outcomes and reviewer agreement
(docs/protocol.md#revision-analysis, docs/protocol.md#reviewer-agreement)."""

from collections import defaultdict
from dataclasses import dataclass

from reviewapp import analysis
from reviewapp.models import Cohort, Review
from reviewapp.protocol import CRITERION_FIELDS


@dataclass(frozen=True)
class CohortReviewAnalysis:
    cohort: Cohort
    submitted_reviews: int
    revisions: analysis.RevisionOutcomes
    revision_pairs: int  # parent → child pairs with both in the cohort
    agreement: tuple[analysis.ReviewerAgreement, ...]  # overall, then the six criteria, then the recommendation


REVIEW_AGREEMENT_FIELDS = ("overall", *CRITERION_FIELDS, "recommendation", "flaw_verdict")


def cohort_review_analysis(cohort: Cohort) -> CohortReviewAnalysis:
    """Revision outcomes of parent → child pairs (mean overall score of each proposal's submitted reviews in the
    cohort) and reviewer agreement per criterion, from the cohort's submitted reviews."""
    reviews = list(
        Review.objects.filter(assignment__cohort=cohort, status=Review.Status.SUBMITTED).values(
            "assignment__proposal_id", *REVIEW_AGREEMENT_FIELDS
        )
    )
    overall = defaultdict(list)
    for review in reviews:
        review["proposal"] = review.pop("assignment__proposal_id")
        overall[review["proposal"]].append(review["overall"])
    members = set(cohort.proposals.values_list("pk", flat=True))
    links = (
        cohort.proposals.model.parents.through.objects.filter(from_proposal__in=members, to_proposal__in=members)
        .values_list("to_proposal_id", "from_proposal_id", "from_proposal__author")
        .order_by("to_proposal_id", "from_proposal_id")
    )
    pairs = [
        (parent, child, author, overall.get(parent, []), overall.get(child, [])) for parent, child, author in links
    ]
    return CohortReviewAnalysis(
        cohort=cohort,
        submitted_reviews=len(reviews),
        revisions=analysis.revision_outcomes(pairs),
        revision_pairs=len(pairs),
        agreement=tuple(analysis.reviewer_agreement(reviews, field) for field in REVIEW_AGREEMENT_FIELDS),
    )
