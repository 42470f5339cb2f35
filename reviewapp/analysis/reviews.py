"""Human review: did a revision improve on its parent? (docs/protocol.md#revision-analysis), and each author's
criterion profile (docs/protocol.md#criterion-profiles)."""

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reviewapp.analysis._resampling import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    estimate,
    per_task_sums,
    ratio,
    resampled_totals,
    task_codes,
)

# Mean scores closer than this are equal: means of a few integers differ by far more when they differ at all.
UNCHANGED_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RevisionGroup:
    """Revision outcomes of a set of parent → child pairs."""

    pairs: int
    improved: int
    unchanged: int
    worsened: int
    improved_share: float | None
    unchanged_share: float | None
    worsened_share: float | None
    mean_change: float | None  # mean over pairs of (child's mean score − parent's mean score)


@dataclass(frozen=True)
class RevisionOutcomes:
    overall: RevisionGroup
    by_author: dict[str, RevisionGroup]  # keyed by str(author)
    not_comparable: int  # pairs left out because the parent or the child had no human score


def _group(changes: list[float]) -> RevisionGroup:
    changes_array = np.asarray(changes, dtype=np.float64)
    improved = int((changes_array > UNCHANGED_TOLERANCE).sum())
    worsened = int((changes_array < -UNCHANGED_TOLERANCE).sum())
    unchanged = len(changes) - improved - worsened
    n = len(changes)
    return RevisionGroup(
        pairs=n,
        improved=improved,
        unchanged=unchanged,
        worsened=worsened,
        improved_share=improved / n if n else None,
        unchanged_share=unchanged / n if n else None,
        worsened_share=worsened / n if n else None,
        mean_change=float(changes_array.mean()) if n else None,
    )


def revision_outcomes(
    pairs: Iterable[tuple[Hashable, Hashable, Hashable, Sequence[float], Sequence[float]]],
) -> RevisionOutcomes:
    """Improved / unchanged / worsened shares and mean change for revised proposals, overall and per author.

    Each pair is ``(parent_id, child_id, author, parent_scores, child_scores)``, the scores being the human
    reviewers' scores of each proposal (for example ``overall``, 1–5). A pair's change is the child's mean score
    minus the parent's mean score: improved when positive, worsened when negative, unchanged when equal. A pair
    where either side has no score cannot be compared; it is counted in ``not_comparable``.
    """
    overall: list[float] = []
    by_author: dict[str, list[float]] = {}
    not_comparable = 0
    for _parent, _child, author, parent_scores, child_scores in pairs:
        if not len(parent_scores) or not len(child_scores):
            not_comparable += 1
            continue
        change = float(np.mean(child_scores) - np.mean(parent_scores))
        overall.append(change)
        by_author.setdefault(str(author), []).append(change)
    return RevisionOutcomes(
        overall=_group(overall),
        by_author={author: _group(changes) for author, changes in by_author.items()},
        not_comparable=not_comparable,
    )


# Criterion profiles per author (docs/protocol.md#criterion-profiles) ---------------------------------------------


@dataclass(frozen=True)
class CriterionMean:
    """The mean of one question's points over an author's submitted reviews, with its task-bootstrap interval."""

    criterion: str
    mean: Estimate
    ratings: int  # reviews with a point on it
    cant_judge: int  # reviews that answered "can't judge" (left out of the mean)
    missing: int  # reviews without an answer (left out)


@dataclass(frozen=True)
class AuthorProfile:
    author: str
    reviews: int
    proposals: int
    tasks: int
    criteria: tuple[CriterionMean, ...]  # in the order of the fields asked for

    def of(self, criterion: str) -> CriterionMean:
        return next(item for item in self.criteria if item.criterion == criterion)


def criterion_profiles(
    reviews: Iterable[Mapping],
    fields: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    cant_judge: str = "cant_judge",
) -> tuple[AuthorProfile, ...]:
    """Per author: the mean of each field's points over the author's reviews, "can't judge" and missing answers left
    out and counted, with a 95% interval from resampling whole research tasks (docs/protocol.md#task-bootstrap: the
    cohort's tasks numbered in order of first appearance, one index matrix shared by every author and field, so
    differences between authors have joint intervals).

    Each review is a mapping with "task", "author", "proposal" and each field's answer (a number, `cant_judge`, or
    None / "" when not given). The mean is a ratio of sums over the drawn tasks: points / rated reviews."""
    reviews = list(reviews)
    authors = sorted({str(review["author"]) for review in reviews})
    if not reviews:
        return ()
    codes, order = task_codes(review["task"] for review in reviews)
    columns = np.zeros((len(reviews), len(authors) * len(fields) * 2))
    author_index = {author: index for index, author in enumerate(authors)}
    counted = {author: {field: [0, 0] for field in fields} for author in authors}  # cant_judge, missing
    for row, review in enumerate(reviews):
        a = author_index[str(review["author"])]
        for f, field in enumerate(fields):
            value = review.get(field)
            if value == cant_judge:
                counted[authors[a]][field][0] += 1
            elif value is None or value == "":
                counted[authors[a]][field][1] += 1
            else:
                column = 2 * (a * len(fields) + f)
                columns[row, column] = float(value)
                columns[row, column + 1] = 1.0
    sums = per_task_sums(codes, len(order), columns)
    totals = sums.sum(axis=0)
    resampled = resampled_totals(sums, resamples, seed) if resamples else None
    profiles = []
    for author in authors:
        a = author_index[author]
        own = [review for review in reviews if str(review["author"]) == author]
        criteria = []
        for f, field in enumerate(fields):
            column = 2 * (a * len(fields) + f)
            point = ratio(totals[column], totals[column + 1])
            spread = ratio(resampled[:, column], resampled[:, column + 1]) if resampled is not None else None
            cant, missing = counted[author][field]
            criteria.append(
                CriterionMean(
                    criterion=field,
                    mean=estimate(point, spread),
                    ratings=int(totals[column + 1]),
                    cant_judge=cant,
                    missing=missing,
                )
            )
        profiles.append(
            AuthorProfile(
                author=author,
                reviews=len(own),
                proposals=len({review["proposal"] for review in own}),
                tasks=len({review["task"] for review in own}),
                criteria=tuple(criteria),
            )
        )
    return tuple(profiles)
