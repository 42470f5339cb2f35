"""What the benchmark room registers with the rooms it builds on, when its app is ready (see apps.py)."""

from django.dispatch import receiver

from literature.hooks import TaskGroupKind, task_group_register
from reviewapp.benchmarks.selectors import benchmark_choices, benchmark_task_group
from reviewapp.benchmarks.services.judging import JOB_KIND, judging_job_run
from reviewapp.benchmarks.services.sets import benchmark_run_pooled, benchmark_run_pooling
from reviewapp.services.jobs import JobKind, job_kind_register
from screening.hooks import run_pooled, run_pooling

job_kind_register(
    JOB_KIND, JobKind(label="Judge scores of a benchmark set", run=judging_job_run, resumable=True, analysts_read=True)
)
# A set's tasks' source publications anchor a citation wave (literature.waves.citation_wave_start_from_tasks).
task_group_register(
    "benchmark", TaskGroupKind(label="Benchmark set", read=benchmark_task_group, choices=benchmark_choices)
)


@receiver(run_pooled, dispatch_uid="benchmark-run-pooled")
def on_run_pooled(sender, run, **kwargs):
    benchmark_run_pooled(run=run)


@receiver(run_pooling, dispatch_uid="benchmark-run-pooling")
def on_run_pooling(sender, run, count, **kwargs):
    benchmark_run_pooling(run=run, count=count)
