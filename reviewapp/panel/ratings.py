"""Pairwise critique ratings (docs/protocol.md#pairwise-critique): TrueSkill over a cohort's comparison log, the
conservative statistic, tie-aware ranks within a stratum, and the choice of the next pairs.

Pure functions, no database. Ratings use the `trueskill` package's default environment (μ 25, σ 25/3, β 25/6,
τ 25/300, draw probability 0.10) and its two-player update: the package's own draw margin and its V and W functions
in the closed form of a two-player match, which gives the numbers of `TrueSkill.rate_1vs1` (the tests hold them to
it) at a tenth of the cost, so a log of 50,000 comparisons replays in well under a second.
"""

import hashlib
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import trueskill

A, B, TIE, INSUFFICIENT = "a", "b", "tie", "insufficient"
OUTCOMES = (A, B, TIE, INSUFFICIENT)
KAPPA = 2
ENVIRONMENT = trueskill.TrueSkill()  # the defaults: mu 25, sigma 25/3, beta 25/6, tau 25/300, draw 0.10
DRAW_MARGIN = trueskill.calc_draw_margin(ENVIRONMENT.draw_probability, 2, env=ENVIRONMENT)
Key = TypeVar("Key", bound=Hashable)
# s values closer than this count as equal when ranking (float noise of otherwise identical histories).
TIE_TOLERANCE = 1e-9


def parameters() -> dict:
    return {
        "mu": ENVIRONMENT.mu,
        "sigma": ENVIRONMENT.sigma,
        "beta": ENVIRONMENT.beta,
        "tau": ENVIRONMENT.tau,
        "draw_probability": ENVIRONMENT.draw_probability,
        "kappa": KAPPA,
    }


@dataclass
class Rating:
    mu: float = ENVIRONMENT.mu
    sigma: float = ENVIRONMENT.sigma
    comparisons: int = 0  # effective comparisons: a, b or tie (insufficient is an abstention)

    @property
    def conservative(self) -> float:
        """s = μ − κσ with κ = 2: about 2.3% of the modelled preference mass lies below it."""
        return self.mu - KAPPA * self.sigma


def rate_pair(a: Rating, b: Rating, outcome: str) -> tuple[Rating, Rating]:
    """The two ratings after one comparison; `insufficient` changes nothing (not even the dynamics τ)."""
    if outcome == INSUFFICIENT:
        return a, b
    if outcome not in (A, B, TIE):
        raise ValueError(f"unknown outcome {outcome!r}")
    winner, loser = (b, a) if outcome == B else (a, b)
    # The dynamics factor widens each prior by τ before the match, as TrueSkill.rate does.
    winner_var = winner.sigma**2 + ENVIRONMENT.tau**2
    loser_var = loser.sigma**2 + ENVIRONMENT.tau**2
    c = math.sqrt(2 * ENVIRONMENT.beta**2 + winner_var + loser_var)
    t, margin = (winner.mu - loser.mu) / c, DRAW_MARGIN / c
    if outcome == TIE:
        v, w = ENVIRONMENT.v_draw(t, margin), ENVIRONMENT.w_draw(t, margin)
    else:
        v, w = ENVIRONMENT.v_win(t, margin), ENVIRONMENT.w_win(t, margin)
    new_winner = Rating(
        mu=winner.mu + winner_var / c * v,
        sigma=math.sqrt(winner_var * (1 - winner_var / c**2 * w)),
        comparisons=winner.comparisons + 1,
    )
    new_loser = Rating(
        mu=loser.mu - loser_var / c * v,
        sigma=math.sqrt(loser_var * (1 - loser_var / c**2 * w)),
        comparisons=loser.comparisons + 1,
    )
    return (new_loser, new_winner) if outcome == B else (new_winner, new_loser)


def replay(comparisons: Iterable[tuple[Key, Key, str]], start: Mapping[Key, Rating] | None = None) -> dict[Key, Rating]:
    """Ratings after applying (a, b, outcome) comparisons online in the given (recorded) order."""
    ratings: dict[Key, Rating] = dict(start or {})
    for a, b, outcome in comparisons:
        if outcome == INSUFFICIENT:
            continue
        ratings[a], ratings[b] = rate_pair(ratings.get(a) or Rating(), ratings.get(b) or Rating(), outcome)
    return ratings


def ranks(conservatives: Mapping[Key, float]) -> dict[Key, float]:
    """Tie-aware rank of each rated member of one stratum in [0, 1], 1 the best:
    r = (number with lower s + ½ × (number with equal s − 1)) / (n − 1); a stratum of one has r = ½. Pass only rated
    members (`stratum_ranks` chooses them): n counts what is passed."""
    n = len(conservatives)
    if n == 1:
        return dict.fromkeys(conservatives, 0.5)
    ordered = sorted(conservatives.values())
    result = {}
    for key, value in conservatives.items():
        lower = _count_below(ordered, value - TIE_TOLERANCE)
        equal = _count_below(ordered, value + TIE_TOLERANCE) - lower
        result[key] = (lower + 0.5 * (equal - 1)) / (n - 1)
    return result


def stratum_ranks(ratings: Mapping[Key, Rating]) -> dict[Key, float]:
    """The ranks of one stratum's rated members (at least one effective comparison). A member never compared, or
    whose comparisons all abstained, holds only the prior: it has no rank and does not count in the stratum's n."""
    return ranks({key: rating.conservative for key, rating in ratings.items() if rating.comparisons > 0})


def _count_below(ordered: Sequence[float], limit: float) -> int:
    """How many values of the sorted list are below limit (binary search)."""
    low, high = 0, len(ordered)
    while low < high:
        middle = (low + high) // 2
        if ordered[middle] < limit:
            low = middle + 1
        else:
            high = middle
    return low


# Choosing the next pairs ----------------------------------------------------------------------------------------

# Each member is paired with at most this many neighbours in s order: closeness is what makes a pair informative, and
# it keeps a round linear in the stratum's size.
NEIGHBOURS = 8


def pair_information(a: Rating, b: Rating) -> float:
    """How much a comparison of a and b is expected to teach: high when their s are close relative to the combined
    uncertainty and when that uncertainty is large."""
    spread = 2 * ENVIRONMENT.beta**2 + a.sigma**2 + b.sigma**2
    closeness = math.exp(-((a.conservative - b.conservative) ** 2) / (2 * spread))
    return closeness * (a.sigma**2 + b.sigma**2) / spread


def next_pairs(
    strata: Mapping[Any, Sequence[Key]],
    ratings: Mapping[Key, Rating],
    *,
    budget_left: Mapping[Key, int],
    compared: set[frozenset],
    repeat: bool = False,
) -> list[tuple[Key, Key]]:
    """One round of pairs: disjoint (each member at most once), within one stratum each, only members with budget
    left, never a pair already compared unless `repeat`; the most informative first."""
    candidates = []
    for members in strata.values():
        open_members = [member for member in members if budget_left.get(member, 0) > 0]
        by_s = sorted(open_members, key=lambda member: (ratings.get(member) or Rating()).conservative)
        for index, first in enumerate(by_s):
            for second in by_s[index + 1 : index + 1 + NEIGHBOURS]:
                if not repeat and frozenset((first, second)) in compared:
                    continue
                score = pair_information(ratings.get(first) or Rating(), ratings.get(second) or Rating())
                candidates.append((-score, str(first), str(second), first, second))
    candidates.sort()
    taken: set = set()
    chosen: list[tuple[Key, Key]] = []
    for _score, _first_key, _second_key, first, second in candidates:
        if first in taken or second in taken:
            continue
        taken.update((first, second))
        chosen.append((first, second))
    return chosen


def shown_first(seed: int, a: Hashable, b: Hashable, occurrence: int = 0) -> bool:
    """Whether `a` is shown to the critique model in position A: a fair coin from the run's recorded seed and the
    pair (and how many times this run already compared it), so the order is random yet reproducible."""
    digest = hashlib.sha256(f"{seed}:{a}:{b}:{occurrence}".encode()).digest()
    return digest[0] < 128
