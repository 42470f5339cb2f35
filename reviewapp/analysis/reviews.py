"""Human review of revised proposals: did a revision improve on its parent? (docs/protocol.md#revision-analysis)."""

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

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
