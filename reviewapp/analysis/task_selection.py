"""The task-selection log: how the benchmark's research tasks were found, filtered and chosen, and the check that
the stored order of the candidates is the one the salted SHA-256 gives (docs/analysis.md#task-selection-log)."""

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def candidate_key(salt: str, pmid: str) -> str:
    """sha256 (hex) of the salt immediately followed by the PubMed id: sha256("<salt><pmid>")."""
    return hashlib.sha256(f"{salt}{pmid}".encode()).hexdigest()


def candidate_order(salt: str, pmids: Iterable[str]) -> list[str]:
    """The PubMed ids in the order they are considered: ascending ``candidate_key`` (the id breaks a tie)."""
    return sorted(pmids, key=lambda pmid: (candidate_key(salt, pmid), pmid))


@dataclass(frozen=True)
class OrderMismatch:
    position: int  # 1-based
    stored: str
    expected: str


@dataclass(frozen=True)
class ExclusionReason:
    reason: str
    records: int


@dataclass(frozen=True)
class TaskSelectionCheck:
    found: int  # records the query returned
    excluded: int  # records the pre-filter excluded
    candidates: int
    final: int  # candidates that became tasks
    counts_add_up: bool  # found = excluded + candidates
    exclusion_reasons: tuple[ExclusionReason, ...]  # most frequent first
    order_reproduces: bool  # the stored candidate order is the salted SHA-256 order
    first_mismatch: OrderMismatch | None
    final_not_candidates: tuple[str, ...]  # final ids that are not among the candidates (should be none)


def task_selection_check(
    *,
    salt: str,
    found: int,
    exclusions: Sequence[tuple[str, str]],
    candidates: Sequence[tuple[int, str]],
    final: Sequence[str],
) -> TaskSelectionCheck:
    """Check a stored selection log.

    ``exclusions`` are (PubMed id, reason) of the pre-filter, ``candidates`` (stored position, PubMed id), ``final``
    the PubMed ids that became tasks. The stored order is the candidates sorted by position; it reproduces when it
    equals ``candidate_order(salt, candidate ids)``; otherwise the first differing position is reported.
    """
    stored = [pmid for _, pmid in sorted(candidates)]
    expected = candidate_order(salt, stored)
    mismatch = next(
        (OrderMismatch(i, s, e) for i, (s, e) in enumerate(zip(stored, expected, strict=True), start=1) if s != e),
        None,
    )
    reasons = Counter(reason for _, reason in exclusions)
    candidate_ids = set(stored)
    return TaskSelectionCheck(
        found=found,
        excluded=len(exclusions),
        candidates=len(stored),
        final=len(final),
        counts_add_up=found == len(exclusions) + len(stored),
        exclusion_reasons=tuple(
            ExclusionReason(reason, records)
            for reason, records in sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
        ),
        order_reproduces=mismatch is None,
        first_mismatch=mismatch,
        final_not_candidates=tuple(pmid for pmid in final if pmid not in candidate_ids),
    )
