"""What the panel room registers with the rooms it builds on, when its app is ready (see apps.py): its two background
jobs, and its columns in the review room's exports."""

from reviewapp.panel.selectors import CRITIQUE_JOB, PANEL_JOB, panel_export_columns
from reviewapp.panel.services.critique import critique_job_run
from reviewapp.panel.services.panel import panel_job_run
from reviewapp.selectors.exports import export_columns_register
from reviewapp.services.jobs import JobKind, job_kind_register

job_kind_register(PANEL_JOB, JobKind(label="AI review panel", run=panel_job_run, analysts_read=True))
job_kind_register(CRITIQUE_JOB, JobKind(label="Pairwise critique", run=critique_job_run, analysts_read=True))
export_columns_register(panel_export_columns)
