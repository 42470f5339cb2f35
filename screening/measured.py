"""What the protocol's selection has been worth where it was measured (docs/protocol.md#two-stages): the one place
the figures live in code. The public start page and the protocol description of the API read them from here, and
the test suite checks that docs/protocol.md states the same sentence."""

from dataclasses import dataclass


@dataclass(frozen=True)
class MeasuredPrecision:
    generator: str
    matches: int  # selected hypotheses that matched the article's finding
    selected: int

    @property
    def percent(self) -> int:
        return round(100 * self.matches / self.selected)


@dataclass(frozen=True)
class MeasuredSelection:
    benchmark: str
    precision: tuple[MeasuredPrecision, ...]
    random_percent: tuple[int, int]  # the range of matches among randomly chosen hypotheses
    stage1: tuple[str, ...]  # the forecasting models it was measured with
    stage2: tuple[str, ...]

    @property
    def sentence(self) -> str:
        """The measurement in one sentence, as docs/protocol.md states it."""
        parts = [f"{p.percent}% of {p.generator}'s ({p.matches} of {p.selected})" for p in self.precision]
        listed = ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else parts[0]
        low, high = self.random_percent
        return (
            "In the benchmark, the hypotheses the rule selected matched the article's finding for "
            f"{listed}, against {low}–{high}% for random choices."
        )

    @property
    def caveat(self) -> str:
        return (
            f"The measured precision belongs to this roster of forecasting models: {', '.join(self.stage1)} at "
            f"stage 1, {', '.join(self.stage2)} at stage 2. It says nothing of another roster, and a single run is "
            "no measurement."
        )

    def holds_for(self, forecasters: dict | None) -> bool:
        """Whether forecasters ({"stage1": [names], "stage2": [names], "simulated"}) are exactly the measured real
        models, stage by stage."""
        if not forecasters or forecasters.get("simulated"):
            return False
        return tuple(forecasters["stage1"]) == self.stage1 and sorted(forecasters["stage2"]) == sorted(self.stage2)


MEASURED_SELECTION = MeasuredSelection(
    benchmark=(
        "the hypothesis-generation benchmark on 50 articles on the biology of ageing published after the models' "
        "stated training cutoffs, three models of other companies judging whether each hypothesis matched the "
        "article's finding"
    ),
    precision=(
        MeasuredPrecision("Grok 4.5", 14, 19),
        MeasuredPrecision("Claude Opus 5.5", 14, 22),
        MeasuredPrecision("Gemini 4 Argon", 9, 19),
    ),
    random_percent=(12, 18),
    stage1=("GPT-6 Astra",),
    stage2=("Claude Sonnet 5.5", "Gemini 4 Argon", "Grok 4.5"),
)
