"""The rubrics of the levels above a single hypothesis (docs/protocol.md#development-paths, #research-runs) and the
rules that turn a judge's dimension scores into a composite.

The rubrics are data (reviewapp/panel/rubrics/<version>.json: dimensions with their labels, one-line definitions
and weights, and the anchors); a new wording is a new file and a new version. Pure functions of plain values, no
database. A score is an int 0–4, "unknown" or "inapplicable"; unknown never becomes a number anywhere.
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from reviewapp.panel.profile import INAPPLICABLE, UNKNOWN

PATH_RUBRIC, RUN_RUBRIC = "dfm-paths-v1", "dfm-runs-v1"
RUBRIC_VERSIONS = (PATH_RUBRIC, RUN_RUBRIC)
ANCHOR_LOW, ANCHOR_HIGH = 0, 4
FULL, RESTRICTED, INCOMPLETE = "full", "restricted", "incomplete"
_RUBRICS_DIR = Path(__file__).parent / "rubrics"


@dataclass(frozen=True)
class RubricDimension:
    key: str
    label: str
    weight: int
    definition: str
    needs_budget: bool  # judged only when the run recorded budgets (otherwise unknown)


@dataclass(frozen=True)
class Rubric:
    version: str
    level: str  # "path" or "run"
    title: str
    labels_note: str
    dimensions: tuple[RubricDimension, ...]
    anchors: dict[int, str]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(dimension.key for dimension in self.dimensions)

    @property
    def weights(self) -> dict[str, int]:
        return {dimension.key: dimension.weight for dimension in self.dimensions}


@cache
def rubric(version: str) -> Rubric:
    """The rubric of a version, read from its file (weights summing to 100, anchors 0–4)."""
    data = json.loads((_RUBRICS_DIR / f"{version}.json").read_text(encoding="utf-8"))
    loaded = Rubric(
        version=data["version"],
        level=data["level"],
        title=data["title"],
        labels_note=data["labels_note"],
        dimensions=tuple(
            RubricDimension(
                key=item["key"],
                label=item["label"],
                weight=int(item["weight"]),
                definition=item["definition"],
                needs_budget=bool(item.get("needs_budget", False)),
            )
            for item in data["dimensions"]
        ),
        anchors={int(score): text for score, text in data["anchors"].items()},
    )
    if loaded.version != version or sum(loaded.weights.values()) != 100:
        raise ValueError(f"The rubric file {version}.json is inconsistent (its version or weights).")
    if sorted(loaded.anchors) != list(range(ANCHOR_LOW, ANCHOR_HIGH + 1)):
        raise ValueError(f"The rubric file {version}.json must anchor every score from 0 to 4.")
    return loaded


def rubrics() -> list[Rubric]:
    return [rubric(version) for version in RUBRIC_VERSIONS]


def is_anchor(score) -> bool:
    """A number on the 0–4 anchors (never a bool)."""
    return type(score) is int and ANCHOR_LOW <= score <= ANCHOR_HIGH


def valid_score(score) -> bool:
    return is_anchor(score) or score in (UNKNOWN, INAPPLICABLE)


def with_budget_rule(
    rubric_: Rubric, scores: Mapping[str, int | str], *, budget_recorded: bool
) -> dict[str, int | str]:
    """The scores as the protocol counts them: a dimension that needs budgets is unknown when the run recorded none,
    whatever the judge said (proposal counts do not reconstruct a missing budget)."""
    counted = dict(scores)
    if not budget_recorded:
        for dimension in rubric_.dimensions:
            if dimension.needs_budget:
                counted[dimension.key] = UNKNOWN
    return counted


@dataclass(frozen=True)
class Composite:
    value: float | None  # 0–100
    scope: str  # full, restricted or incomplete
    mask: str  # one character per dimension in rubric order: 1 applicable, 0 inapplicable
    unknown: tuple[str, ...]
    inapplicable: tuple[str, ...]


def composite(rubric_: Rubric, scores: Mapping[str, int | str]) -> Composite:
    """Σ weight × score / 4 over the rubric (/100), only when no dimension is unknown. Inapplicable dimensions make a
    restricted-scope composite over the applicable ones (their weights rescaled to 100), reported with its mask and
    never pooled with full composites; a missing or unknown score leaves no composite (incomplete)."""
    unknown = tuple(key for key in rubric_.keys if not is_anchor(scores.get(key)) and scores.get(key) != INAPPLICABLE)
    inapplicable = tuple(key for key in rubric_.keys if scores.get(key) == INAPPLICABLE)
    mask = "".join("0" if key in inapplicable else "1" for key in rubric_.keys)
    applicable = [dimension for dimension in rubric_.dimensions if dimension.key not in inapplicable]
    if unknown or not applicable:
        return Composite(None, INCOMPLETE, mask, unknown, inapplicable)
    weight = sum(dimension.weight for dimension in applicable)
    total = sum(dimension.weight * int(scores[dimension.key]) for dimension in applicable)
    value = 100 * total / (ANCHOR_HIGH * weight)
    return Composite(value, RESTRICTED if inapplicable else FULL, mask, unknown, inapplicable)


@dataclass(frozen=True)
class CompositeSummary:
    complete: int  # full composites
    mean: float | None  # of the full composites only
    restricted: list[dict]  # [{"mask", "n", "mean"}], one group per applicability mask
    incomplete: int


def composite_summary(composites: Iterable[Composite]) -> CompositeSummary:
    """Full composites' mean beside the restricted ones grouped by mask (never pooled), and the incomplete count.
    Path measurements share ancestors: these are descriptive figures, not independent samples."""
    full, by_mask, incomplete = [], defaultdict(list), 0
    for item in composites:
        if item.scope == FULL:
            full.append(item.value)
        elif item.scope == RESTRICTED:
            by_mask[item.mask].append(item.value)
        else:
            incomplete += 1
    return CompositeSummary(
        complete=len(full),
        mean=sum(full) / len(full) if full else None,
        restricted=[
            {"mask": mask, "n": len(values), "mean": sum(values) / len(values)}
            for mask, values in sorted(by_mask.items())
        ],
        incomplete=incomplete,
    )
