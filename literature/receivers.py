"""What the literature room registers when its app is ready (see apps.py): its Celery tasks, the check that does
each work item of a screening run's literature step, the sweeps of its on-demand checks, citation waves and staged
file imports, and cohorts as groups of tasks whose sources anchor a wave."""

from literature import tasks  # noqa: F401 (registers the tasks by name)
from literature.hooks import TaskGroupKind, task_group_register
from literature.novelty import novelty_checks_sweep, run_hypothesis_check
from literature.selectors import cohort_choices, cohort_task_group
from literature.services import reference_imports_sweep
from literature.waves import citation_waves_sweep
from reviewapp.core.claims import sweep_register
from screening.hooks import literature_step_register

literature_step_register(run_hypothesis_check)
sweep_register("novelty checks", novelty_checks_sweep)
sweep_register("citation waves", citation_waves_sweep)
sweep_register("staged reference imports", reference_imports_sweep)
task_group_register("cohort", TaskGroupKind(label="Cohort", read=cohort_task_group, choices=cohort_choices))
