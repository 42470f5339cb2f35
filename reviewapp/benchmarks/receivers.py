"""What the benchmark room registers with the rooms it builds on, when its app is ready (see apps.py)."""

from django.dispatch import receiver

from reviewapp.benchmarks.services.judging import JOB_KIND, judging_job_run
from reviewapp.benchmarks.services.sets import benchmark_run_pooled
from reviewapp.services.jobs import JobKind, job_kind_register
from screening.hooks import run_pooled

job_kind_register(JOB_KIND, JobKind(label="Judge scores of a benchmark set", run=judging_job_run, resumable=True))


@receiver(run_pooled, dispatch_uid="benchmark-run-pooled")
def on_run_pooled(sender, run, **kwargs):
    benchmark_run_pooled(run=run)
