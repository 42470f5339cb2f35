"""What the inspiration room registers when its app is ready (see apps.py): its Celery tasks, the sweep of audit
batches whose worker died (run by the one sweeper, reviewapp.core.claims.sweep_all), and the reader that tells the
literature room's reference pages which audits used a reference."""

from literature.hooks import reference_uses_register
from reviewapp.core.claims import sweep_register
from reviewapp.inspiration import tasks  # noqa: F401 (registers the tasks by name)
from reviewapp.inspiration.selectors import reference_uses
from reviewapp.inspiration.services import batches_sweep

reference_uses_register(reference_uses)
sweep_register("inspiration audits", batches_sweep)
