"""Which forecast requests a run sends: what each holds, in which order, under which ids
(docs/protocol.md#forecast-designs).

The requests are a function of the stored pool (positions, labels, stage-1 outcomes), so the work item of a request
finds its hypotheses again from its slot alone, and the same requests can be sent again byte for byte
(docs/protocol.md#repeating-the-forecasts).

- Pooled design: stage 1 is one request with every hypothesis; stage 2 is one request per model with the hypotheses
  stage 1 kept. Ids are the blind numbers.
- Matrix design: each generator's hypotheses apart, in pool order, in requests of MATRIX_REQUEST_SIZE numbered
  H1…H5 afresh in each request (the single-hypothesis question: one hypothesis a request, under its blind number in
  the protocol's twelve-digit form, H000000000007),
  and every model of both stages asked every request.
"""

from dataclasses import dataclass
from itertools import groupby

from screening.models import Hypothesis, Run
from screening.prompts import single_hypothesis_id

# Hypotheses per request of a matrix run (docs/protocol.md#forecast-designs).
MATRIX_REQUEST_SIZE = 5
ROLE_OF_STAGE = {1: "stage1", 2: "stage2"}


@dataclass(frozen=True)
class ForecastRequest:
    stage: int
    member: int  # the model's position in its stage's roster list
    index: int  # the request's number among the model's requests
    hypotheses: tuple[Hypothesis, ...]
    labels: tuple[str, ...]  # the id each hypothesis carries in the request, in order

    @property
    def role(self) -> str:
        return ROLE_OF_STAGE[self.stage]


def _groups(run: Run, stage: int) -> list[tuple[tuple[Hypothesis, ...], tuple[str, ...]]]:
    """The contents of a stage's requests (the same for every model of the stage): (hypotheses, ids)."""
    pool = list(run.hypotheses.exclude(label="").order_by("position"))
    if run.design != Run.Design.MATRIX:
        if stage == 2:
            pool = [h for h in pool if h.stage1 == Hypothesis.Stage1.KEPT]
            if not pool:
                return []
        return [(tuple(pool), tuple(h.label for h in pool))]
    single = run.forecast_question == Run.Question.SINGLE
    size = 1 if single else MATRIX_REQUEST_SIZE
    groups = []
    for _, of_source in groupby(pool, key=lambda hypothesis: hypothesis.source):
        hypotheses = list(of_source)
        for start in range(0, len(hypotheses), size):
            chunk = tuple(hypotheses[start : start + size])
            if single:
                labels = tuple(single_hypothesis_id(h.label) for h in chunk)
            else:
                labels = tuple(f"H{n}" for n in range(1, len(chunk) + 1))
            groups.append((chunk, labels))
    return groups


def run_requests(run: Run, stage: int) -> list[ForecastRequest]:
    """A stage's requests in slot order: every request of the first model, then of the next."""
    groups = _groups(run, stage)
    members = run.roster["roles"][ROLE_OF_STAGE[stage]]
    return [
        ForecastRequest(stage=stage, member=member, index=index, hypotheses=hypotheses, labels=labels)
        for member in range(len(members))
        for index, (hypotheses, labels) in enumerate(groups)
    ]


def repeat_requests(run: Run) -> list[ForecastRequest]:
    """Every request the run sent in its first round, in the same order: stage 1's, then stage 2's."""
    return run_requests(run, 1) + run_requests(run, 2)
