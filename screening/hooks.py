"""Where the screening pipeline hands work on to the rooms that consume its runs, without importing them
(docs/architecture.md#how-a-run-flows).

- `run_pooling`: a signal sent inside the transaction that pools a run's hypotheses, before they are shuffled and
  numbered (kwargs: `run`, `count`: how many there are). Receivers draw what must not depend on the pool's order; a
  benchmark set draws and stores its random control's answers here.
- `run_pooled`: sent in the same transaction once the hypotheses are shuffled and numbered (the pool is frozen,
  `run.pooled_at`), before any forecast is asked (kwargs: `run`). Receivers record what must be fixed before
  forecasting; a benchmark set records its hypotheses and gives each its drawn answer in pool order.
- `run_selection_made`: sent in the transaction that records a run's selection, as the run moves on to its
  literature step (kwargs: `run`). Receivers may ask for what needs the selection, such as the forecasts asked again.
- The literature step: the literature room registers the function that checks one selected hypothesis
  (`literature_step_register`); the pipeline claims, records and moves on each such work item as it does its own.
  Without a registered check the step's items fail with a reason the run shows.
"""

from collections.abc import Callable

from django.dispatch import Signal

run_pooling = Signal()
run_pooled = Signal()
run_selection_made = Signal()

_literature_step: list[Callable] = []


def literature_step_register(perform: Callable) -> None:
    """perform(item) → screening.services.work.Outcome, for one work item of a run's literature step."""
    _literature_step[:] = [perform]


def literature_step() -> Callable | None:
    return _literature_step[0] if _literature_step else None
