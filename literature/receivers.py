"""What the literature room registers when its app is ready (see apps.py): its Celery tasks, and the check that does
each work item of a screening run's literature step."""

from literature import tasks  # noqa: F401 (registers the tasks by name)
from literature.novelty import run_hypothesis_check
from screening.hooks import literature_step_register

literature_step_register(run_hypothesis_check)
