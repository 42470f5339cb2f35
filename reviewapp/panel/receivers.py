"""What the panel room registers with the rooms it builds on, when its app is ready (see apps.py): its two background
jobs, its columns in the review room's exports and the evaluation's sheets in the reviews workbook."""

from reviewapp.panel.research import level_tables
from reviewapp.panel.selectors import CRITIQUE_JOB, PANEL_JOB, panel_export_columns
from reviewapp.panel.services.critique import critique_job_run
from reviewapp.panel.services.families import families_group
from reviewapp.panel.services.panel import panel_job_run
from reviewapp.selectors.exports import export_columns_register, export_sheets_register
from reviewapp.services.jobs import JobKind, job_kind_register

job_kind_register(PANEL_JOB, JobKind(label="AI review panel", run=panel_job_run, analysts_read=True))
job_kind_register(CRITIQUE_JOB, JobKind(label="Pairwise critique", run=critique_job_run, analysts_read=True))
export_columns_register(panel_export_columns)


def evaluation_sheets(cohort) -> list:
    """The levels above single hypotheses as sheets of the cohort's workbook (paths, runs, families, delivery), for
    a cohort with at least one parent→child edge or delivery record; the families' starting grouping made first."""
    families_group(cohort=cohort)
    tables = level_tables(cohort)
    if len(tables["paths"]) == 1 and all(
        row[3:] == ["not_recorded"] * (len(row) - 3) for row in tables["delivery"][1:]
    ):
        return []
    return [(f"evaluation_{name}", rows) for name, rows in tables.items()]


export_sheets_register(evaluation_sheets)
