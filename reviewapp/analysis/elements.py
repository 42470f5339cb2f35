"""The lexical check of key elements: how many of a reference statement's key elements a hypothesis names in the
same words, and how well that separates matching from non-matching hypotheses (docs/analysis.md#key-elements).

The check recognises the same words, not a paraphrase; it describes the judges' decisions and never replaces them.
"""

import functools
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from reviewapp.analysis._resampling import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    as_float,
    estimate,
    ratio,
    resampled_totals,
    task_sums,
)
from reviewapp.analysis.ranking import AucEstimate, auc_estimate

NAMED_SHARE = Fraction(2, 3)
_WORD = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=4096)  # a task's elements are read once per hypothesis of the task
def content_words(text: str) -> frozenset[str]:
    """The distinct words of a text (runs of letters and digits, lower-cased) that are not English stop words
    (scikit-learn's list)."""
    return frozenset(word for word in _WORD.findall(text.casefold()) if word not in ENGLISH_STOP_WORDS)


def named_elements(elements: Sequence[str], text: str) -> tuple[int, int]:
    """(named, usable): an element is named when at least two thirds of its content words occur in the text; an
    element without content words is not usable and not counted."""
    words = content_words(text)
    named = usable = 0
    for element in elements:
        own = content_words(element)
        if not own:
            continue
        usable += 1
        named += len(own & words) >= NAMED_SHARE * len(own)
    return named, usable


@dataclass(frozen=True)
class KeyElements:
    hypotheses: int  # judged hypotheses whose task has usable key elements
    matches: int
    mean_share_matching: float | None  # mean share of elements named, matching hypotheses
    mean_share_other: float | None
    at_least_one_matching: int  # hypotheses naming at least one element
    at_least_one_other: int
    at_least_two_matching: int
    at_least_two_other: int
    auc: AucEstimate | None  # of the share named against the match
    odds_ratio: Estimate  # of a match, naming at least one element against naming none
    resamples: int
    seed: int


def key_element_analysis(
    rows: Iterable[tuple[Hashable, Sequence[str], str, bool | None]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> KeyElements:
    """Rows are ``(task, the task's key elements, the hypothesis's text, match)``; not-judged hypotheses and tasks
    without usable elements are left out.

    The share named is named / usable elements. AUC: how well the share separates matching from other hypotheses
    (ties one half), interval by task resamples. Odds ratio of a match for naming at least one element:
    (a·d) / (b·c) with a = matching and naming, b = other and naming, c = matching and naming none, d = other and
    naming none; its interval comes from the same task resamples (ratios of summed cells; a resample with a zero in
    b·c or a·d's denominator is undefined and counted).
    """
    tasks, shares, named_counts, labels = [], [], [], []
    for task, elements, text, match in rows:
        if match is None:
            continue
        named, usable = named_elements(elements, text)
        if not usable:
            continue
        tasks.append(task)
        shares.append(named / usable)
        named_counts.append(named)
        labels.append(bool(match))
    share = np.asarray(shares, dtype=np.float64)
    named = np.asarray(named_counts)
    match = np.asarray(labels, dtype=bool)
    some = named >= 1
    cells = np.column_stack([match & some, ~match & some, match & ~some, ~match & ~some]).astype(np.float64)

    def odds(totals):
        return ratio(totals[..., 0] * totals[..., 3], totals[..., 1] * totals[..., 2])

    resampled = None
    if resamples and tasks:
        _, sums = task_sums(tasks, cells)
        resampled = odds(resampled_totals(sums, resamples, seed))
    totals = cells.sum(axis=0) if tasks else np.zeros(4)
    return KeyElements(
        hypotheses=int(match.size),
        matches=int(match.sum()),
        mean_share_matching=as_float(share[match].mean()) if match.any() else None,
        mean_share_other=as_float(share[~match].mean()) if (~match).any() else None,
        at_least_one_matching=int((match & some).sum()),
        at_least_one_other=int((~match & some).sum()),
        at_least_two_matching=int((match & (named >= 2)).sum()),
        at_least_two_other=int((~match & (named >= 2)).sum()),
        auc=auc_estimate(tasks, share, match, resamples=resamples, seed=seed) if tasks else None,
        odds_ratio=estimate(odds(totals), resampled),
        resamples=resamples,
        seed=seed,
    )
