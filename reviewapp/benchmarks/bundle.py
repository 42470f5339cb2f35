"""The published-data bundle of a benchmark set (docs/protocol.md#published-data): report.json, cohort.json,
selected.csv and checksums.sha256, zipped.

The bundle is a function of the stored data only: the same data give the same bytes, file by file and zipped
(sorted JSON keys, fixed file order, fixed zip timestamps and attributes, no time of export anywhere), so that a
published checksum identifies the data for good.

- cohort.json: the frozen hypothesis sets, task by task in pool order, as the forecasting models received them,
  with each task's random control (the answers as drawn and as given out in pool order, the time they were drawn,
  the time the pool was frozen and the sha256 of the frozen set).
- report.json: the set, its judges, its tasks with reference statements and runs, every hypothesis with its
  forecasts, selection, judge scores and outcome, and the statistics (docs/protocol.md#statistics).
- selected.csv: the selected hypotheses with their outcomes.
- analysis.json: every table of the appendices' analyses with the seeds it used (docs/analysis.md#analysisjson).
- checksums.sha256: the sha256 of each of the data files, in the format of `sha256sum --check`.
"""

import csv
import hashlib
import io
import json
import zipfile
from datetime import datetime

from reviewapp.benchmarks.models import BenchmarkSet, Judge, RandomControlDraw
from reviewapp.benchmarks.selectors import (
    benchmark_data_version,
    benchmark_imports,
    benchmark_judges,
    benchmark_rows,
    benchmark_statistics,
)
from reviewapp.benchmarks.statistics import HypothesisRow, statistics_as_dict
from reviewapp.benchmarks.study_tables import study_json
from reviewapp.selectors.exports import spreadsheet_text

DATA_FILES = ("report.json", "cohort.json", "selected.csv", "analysis.json")
CHECKSUMS = "checksums.sha256"
REPORT_FORMAT = "open-hypothesis-benchmark-report-v1"
COHORT_FORMAT = "open-hypothesis-benchmark-cohort-v1"
ANALYSIS_FORMAT = "open-hypothesis-benchmark-analysis-v1"
SELECTED_COLUMNS = (
    "task",
    "hypothesis",
    "generator",
    "generator_company",
    "statement",
    "mechanism",
    "prediction",
    "primary",
    "strict",
    "borderline",
    "outcome",
)
# The earliest time a zip entry can carry: no entry says when the bundle was made.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _json_bytes(data) -> bytes:
    return (json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2, default=_json_default) + "\n").encode()


def _json_default(value):
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def yes_no(value: bool | None) -> str:
    """yes / no, and empty for a value that does not exist (a hypothesis not judged)."""
    return "" if value is None else "yes" if value else "no"


def _outcome(row: HypothesisRow) -> dict:
    outcome = row.outcome
    return {
        "status": row.status,
        "primary": row.primary,
        "strict": row.strict,
        "borderline": row.borderline,
        "primary_votes": outcome.primary_votes if outcome else None,
        "strict_votes": outcome.strict_votes if outcome else None,
        "deciding_judges": list(outcome.judges) if outcome else [],
        "excluded_judges": list(row.excluded_judges),
        "note": row.outcome_note,
    }


def cohort_data(benchmark: BenchmarkSet, rows: list[HypothesisRow]) -> dict:
    draws = {
        draw.benchmark_task.task.key: draw
        for draw in RandomControlDraw.objects.filter(benchmark_task__benchmark=benchmark).select_related(
            "benchmark_task__task"
        )
    }
    tasks = []
    for benchmark_task in benchmark.benchmark_tasks.select_related("task").order_by("position", "pk"):
        task = benchmark_task.task
        draw = draws.get(task.key)
        tasks.append(
            {
                "key": task.key,
                "question": task.question,
                "background": task.background,
                "hypotheses": [
                    {
                        "id": row.key,
                        "generator": row.generator,
                        "generator_company": row.generator_company,
                        "statement": row.statement,
                        "mechanism": row.mechanism,
                        "prediction": row.prediction,
                    }
                    for row in rows
                    if row.task_key == task.key
                ],
                "random_control": None
                if draw is None
                else {
                    "drawn_at": draw.drawn_at,
                    "frozen_at": draw.frozen_at,
                    "generator": draw.generator,
                    "sequence": draw.sequence,
                    "hypotheses_sha256": draw.hypotheses_sha256,
                    "hypothesis_count": draw.hypothesis_count,
                    "answers": draw.answers,
                },
            }
        )
    return {"format": COHORT_FORMAT, "benchmark": benchmark.name, "tasks": tasks}


def _judge(judge: Judge) -> dict:
    return {
        "name": judge.name,
        "company": judge.company,
        "model": judge.endpoint.model_id if judge.endpoint else None,
        "position": judge.position,
    }


def report_data(benchmark: BenchmarkSet, rows: list[HypothesisRow], judges: list[Judge], statistics) -> dict:
    tasks = []
    for benchmark_task in benchmark.benchmark_tasks.select_related("task", "run").order_by("position", "pk"):
        task, run = benchmark_task.task, benchmark_task.run
        tasks.append(
            {
                "key": task.key,
                "question": task.question,
                "reference_statement": task.reference_statement,
                "run": None
                if run is None
                else {
                    "id": str(run.public_id),
                    "status": run.status,
                    "protocol": run.protocol,
                    "shuffle_seed": run.shuffle_seed,
                    "roster": run.roster,
                    "simulated": run.simulated,
                    "started_at": run.created_at,
                    "finished_at": run.finished_at,
                },
            }
        )
    hypotheses = [
        {
            "task": row.task_key,
            "id": row.key,
            "source": row.source,
            "generator": row.generator,
            "generator_company": row.generator_company,
            "first_stage": row.first_stage,
            "forecasts": row.forecasts,
            "selected": row.selected,
            "random_answer": row.random_answer,
            "scores": row.scores,
            "outcome": _outcome(row),
        }
        for row in rows
    ]
    return {
        "format": REPORT_FORMAT,
        "benchmark": {
            "name": benchmark.name,
            "description": benchmark.description,
            "seed": benchmark.seed,
            "roster": benchmark.roster.name if benchmark.roster else None,
        },
        "outcome_rule": (
            "The judge of the generator's company is excluded. Primary: positive when at least two of the three "
            "other-company judges give 3 or more; strict: at least two give 4 or 5; borderline: the primary "
            "decision was 2-1. Fewer than three usable scores: not judged, never negative."
        ),
        "judges": [_judge(judge) for judge in judges],
        "tasks": tasks,
        "hypotheses": hypotheses,
        "imports": [
            {"filename": batch.filename, "format": batch.file_format, "sha256": batch.sha256}
            for batch in benchmark_imports(benchmark)
        ],
        "statistics": statistics_as_dict(statistics),
    }


def analysis_data(benchmark: BenchmarkSet, statistics) -> dict:
    return {"format": ANALYSIS_FORMAT, "benchmark": benchmark.name, **study_json(statistics)}


def selected_csv(rows: list[HypothesisRow]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(SELECTED_COLUMNS)
    for row in rows:
        if not row.selected:
            continue
        writer.writerow(
            [
                *(
                    spreadsheet_text(value)
                    for value in (
                        row.task_key,
                        row.key,
                        row.generator,
                        row.generator_company,
                        row.statement,
                        row.mechanism,
                        row.prediction,
                    )
                ),
                yes_no(row.primary),
                yes_no(row.strict),
                yes_no(row.borderline),
                row.status,
            ]
        )
    return buffer.getvalue().encode()


def bundle_files(
    benchmark: BenchmarkSet,
    *,
    judges: list[Judge] | None = None,
    rows: list[HypothesisRow] | None = None,
    data_version: str | None = None,
) -> dict[str, bytes]:
    """The data files, by name, with the benchmark's seeds. Pass the judges and rows already read to save reading
    them again, with the data version read before them (selectors.benchmark_data_version)."""
    if rows is None:
        data_version = benchmark_data_version(benchmark.pk)
    judges = benchmark_judges(benchmark) if judges is None else judges
    rows = benchmark_rows(benchmark, judges) if rows is None else rows
    statistics = benchmark_statistics(benchmark, judges=judges, rows=rows, data_version=data_version)
    return {
        "report.json": _json_bytes(report_data(benchmark, rows, judges, statistics)),
        "cohort.json": _json_bytes(cohort_data(benchmark, rows)),
        "selected.csv": selected_csv(rows),
        "analysis.json": _json_bytes(analysis_data(benchmark, statistics)),
    }


def checksums_text(files: dict[str, bytes]) -> bytes:
    return "".join(f"{hashlib.sha256(files[name]).hexdigest()}  {name}\n" for name in DATA_FILES).encode()


def bundle_zip(benchmark: BenchmarkSet) -> bytes:
    files = bundle_files(benchmark)
    files[CHECKSUMS] = checksums_text(files)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in (*DATA_FILES, CHECKSUMS):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, whatever system writes it
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name], compresslevel=9)
    return buffer.getvalue()
