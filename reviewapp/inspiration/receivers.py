"""What the inspiration room registers when its app is ready (see apps.py): its Celery tasks, and the reader that
tells the literature room's reference pages which audits used a reference."""

from literature.hooks import reference_uses_register
from reviewapp.inspiration import tasks  # noqa: F401 (registers the tasks by name)
from reviewapp.inspiration.selectors import reference_uses

reference_uses_register(reference_uses)
