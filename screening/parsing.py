"""Reading the protocol's replies: forecasts (with the detailed and single-question modes) and generated hypotheses
(docs/protocol.md#reading-replies). The JSON itself is extracted by screening.llm.replies.
"""

from dataclasses import dataclass, field

from screening.llm.replies import ReplyParseError, extract_json, normalize_label


@dataclass
class ForecastParse:
    """votes: every expected id → True, False or None. `parsed`: the reply held a forecasts array at all (a reply
    without one gives no vote). `complete`: every expected id has exactly one boolean (otherwise ask once more)."""

    votes: dict[str, bool | None]
    parsed: bool
    complete: bool
    problems: list[str] = field(default_factory=list)


def _forecast_items(obj) -> list | None:
    if isinstance(obj, dict) and isinstance(obj.get("forecasts"), list):
        return obj["forecasts"]
    if isinstance(obj, list):
        return obj
    return None


def _collect_by_id(items: list, expected: list[str], problems: list[str]) -> dict[str, list]:
    """Items grouped by their normalized id, keeping only expected ids; problems for the rest."""
    by_id: dict[str, list] = {label: [] for label in expected}
    for position, item in enumerate(items, start=1):
        label = normalize_label(item.get("id")) if isinstance(item, dict) else None
        if label is None:
            problems.append(f"item {position} has no id")
        elif label not in by_id:
            problems.append(f"unknown id {label}")
        else:
            by_id[label].append(item)
    for label, found in by_id.items():
        if not found:
            problems.append(f"missing id {label}")
        elif len(found) > 1:
            problems.append(f"duplicate id {label}")
    return by_id


def _single_items(text: str | None, expected_ids: list[str]) -> tuple[list[str], dict[str, dict] | None, list[str]]:
    """The expected ids (normalized), the reply's one forecast item of each id that has exactly one (None when the
    reply holds no forecasts array that can be read) and the problems found so far."""
    expected = [normalize_label(label) or label for label in expected_ids]
    try:
        obj = extract_json(text)
    except ReplyParseError as exc:
        return expected, None, [f"{exc.kind}: {exc}"]
    items = _forecast_items(obj)
    if items is None:
        return expected, None, ["no forecasts array"]
    problems: list[str] = []
    by_id = _collect_by_id(items, expected, problems)
    return expected, {label: found[0] for label, found in by_id.items() if len(found) == 1}, problems


def parse_forecasts(text: str | None, expected_ids: list[str]) -> ForecastParse:
    """Read a short-question reply, {"forecasts": [{"id": "H1", "confirmed": true}, ...]}
    (docs/protocol.md#reading-replies).

    A repeated id gives no vote for that id; "confirmed" must be a JSON boolean."""
    expected, items, problems = _single_items(text, expected_ids)
    votes: dict[str, bool | None] = dict.fromkeys(expected)
    if items is None:
        return ForecastParse(votes=votes, parsed=False, complete=False, problems=problems)
    for label, item in items.items():
        confirmed = item.get("confirmed")
        if isinstance(confirmed, bool):
            votes[label] = confirmed
        else:
            problems.append(f"non-boolean answer for {label}")
    complete = all(isinstance(vote, bool) for vote in votes.values())
    return ForecastParse(votes=votes, parsed=True, complete=complete, problems=problems)


@dataclass
class DetailedForecast:
    p_experimental_support: float | None
    recommend_for_testing: bool | None
    reason: str
    test: dict
    raw: dict


@dataclass
class DetailedForecastParse:
    """The detailed instruction's reply (docs/protocol.md#detailed-instruction), per expected id (None where the item
    was unusable)."""

    forecasts: dict[str, DetailedForecast | None]
    parsed: bool
    complete: bool
    problems: list[str] = field(default_factory=list)


def _probability(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= 1 else None


def parse_detailed_forecasts(text: str | None, expected_ids: list[str]) -> DetailedForecastParse:
    expected, items, problems = _single_items(text, expected_ids)
    forecasts: dict[str, DetailedForecast | None] = dict.fromkeys(expected)
    if items is None:
        return DetailedForecastParse(forecasts=forecasts, parsed=False, complete=False, problems=problems)
    for label, item in items.items():
        probability = _probability(item.get("p_experimental_support"))
        if item.get("p_experimental_support") is not None and probability is None:
            problems.append(f"p_experimental_support of {label} is not a number between 0 and 1")
        recommend = item.get("recommend_for_testing")
        if not isinstance(recommend, bool):
            problems.append(f"non-boolean recommend_for_testing for {label}")
            recommend = None
        forecasts[label] = DetailedForecast(
            p_experimental_support=probability,
            recommend_for_testing=recommend,
            reason=item.get("reason") if isinstance(item.get("reason"), str) else "",
            test=item.get("test") if isinstance(item.get("test"), dict) else {},
            raw=item,
        )
    complete = all(f is not None and f.recommend_for_testing is not None for f in forecasts.values())
    return DetailedForecastParse(forecasts=forecasts, parsed=True, complete=complete, problems=problems)


HYPOTHESIS_FIELDS = ("statement", "mechanism", "prediction", "domain_category")


class ParsedHypotheses(list):
    """The well-formed hypotheses of a generation reply, in order; `problems` names what was skipped and why."""

    def __init__(self, hypotheses=(), problems=None):
        super().__init__(hypotheses)
        self.problems: list[str] = problems or []


def parse_hypotheses(text: str | None) -> ParsedHypotheses:
    """Read a generation reply ({"hypotheses": [{statement, mechanism, prediction, domain_category}], "notes"}).

    An item needs a non-empty statement, mechanism and prediction (the forecast text is built from all three);
    domain_category may be missing. Malformed items are skipped and reported; an unreadable reply gives none."""
    try:
        obj = extract_json(text)
    except ReplyParseError as exc:
        return ParsedHypotheses(problems=[f"{exc.kind}: {exc}"])
    if isinstance(obj, dict) and isinstance(obj.get("hypotheses"), list):
        items = obj["hypotheses"]
    elif isinstance(obj, list):
        items = obj
    else:
        return ParsedHypotheses(problems=["no hypotheses array"])

    hypotheses, problems = [], []
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            problems.append(f"item {position} is not an object")
            continue
        values = {name: item.get(name, "") for name in HYPOTHESIS_FIELDS}
        wrong_type = [name for name, value in values.items() if not isinstance(value, str)]
        if wrong_type:
            problems.append(f"item {position}: {', '.join(wrong_type)} not text")
            continue
        values = {name: value.strip() for name, value in values.items()}
        empty = [name for name in HYPOTHESIS_FIELDS[:3] if not values[name]]
        if empty:
            problems.append(f"item {position}: no {', '.join(empty)}")
            continue
        hypotheses.append(values)
    return ParsedHypotheses(hypotheses, problems)
