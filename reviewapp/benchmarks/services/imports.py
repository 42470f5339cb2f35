"""Import into a benchmark set: research tasks, hypotheses produced elsewhere with their forecasts, and judge scores.

One file (JSON, CSV or XLSX) holds any of three tables:

- ``tasks``: the cohort import's task table (key, question, background, reference_statement, published, dataset,
  and optionally sources, the PMIDs and DOIs of the task's source publications); a benchmark task needs its
  reference statement.
- ``hypotheses``: task, id, generator, generator_company, statement, mechanism, prediction, first_stage, selected,
  optionally confirmed, method and generation_round (how and in which round the hypothesis was generated), and the
  forecasts per model (JSON: ``"forecasts": {"model": true}``; CSV and XLSX: one ``forecast:<model>``
  column per model, empty for no vote).
- ``scores``: task, hypothesis, judge, score (0–5), and optionally judge_company (names the company of a judge
  the set does not have yet, which the import then adds) and reason;
- the tables only the analyses read (reviewapp.benchmarks.services.analysis_inputs): forecasters, probabilities,
  repeat_forecasts, instruction_forecasts, directions, hints, key_elements, quality_scores (judges as for scores),
  selection_log, selection_records.
  repeat_forecasts, hints, key_elements, quality_scores (judges as for scores), selection_log, selection_records,
  excluded_sets.

As for cohorts (reviewapp.services.imports, whose task validation this reuses): the whole file is validated before
anything is written, a file with any problem imports nothing and every problem comes back with its table, row and
field; the same bytes imported into the same set again change nothing; records that already exist are reused when
identical and refused when different, never overwritten.
"""

import hashlib
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max

from reviewapp.analysis.judges import company_key, judge_score
from reviewapp.analysis.originality import DIMENSIONS
from reviewapp.benchmarks.models import (
    ONE_REQUEST,
    BenchmarkHypothesis,
    BenchmarkImport,
    BenchmarkSet,
    BenchmarkTask,
    Judge,
    JudgeScore,
    QualityScore,
)
from reviewapp.benchmarks.services.analysis_inputs import (
    ANALYSIS_CSV_TABLES,
    ANALYSIS_FIELDS,
    ANALYSIS_FREE_TEXT,
    ANALYSIS_REQUIRED,
    DIRECTIONS,
    EXCLUDED_SETS,
    FORECASTERS,
    HINTS,
    INSTRUCTION_FORECASTS,
    PROBABILITIES,
    QUALITY_SCORES,
    REPEAT_FORECASTS,
    SELECTION_RECORDS,
    AnalysisInputsPlan,
    clean_direction,
    clean_instruction,
    clean_number,
    clean_probability,
    clean_quality,
    clean_round,
    clean_status,
    clean_whole,
    excluded_set_key,
    quality_scores_write,
)
from reviewapp.benchmarks.services.versions import benchmark_set_touch
from reviewapp.models import ResearchTask

# The cohort import's task validation, shared so that tasks are imported the same way everywhere.
from reviewapp.services.imports import (
    TASK_FIELDS,
    TASKS,
    _check_against_database,
    _clean_date,
    _clean_table,
    _fetch_in,
    _sha256_json,
    batch_fields,
    clean_sources,
    refused_when_raced,
    task_content_sha256,
)
from reviewapp.services.tabular_files import (
    ImportInvalid,
    KeyedColumns,
    TableFile,
    as_text,
    clean_rows,
    problem,
)

HYPOTHESES, SCORES = "hypotheses", "scores"
TABLES = (TASKS, HYPOTHESES, SCORES, *ANALYSIS_FIELDS)
HYPOTHESIS_FIELDS = (
    "task",
    "id",
    "generator",
    "generator_company",
    "statement",
    "mechanism",
    "prediction",
    "first_stage",
    "selected",
    "confirmed",
    "method",
    "generation_round",
    "forecasts",
)
# Fields a hypothesis's content fingerprint covers only when given, so that the fingerprints of hypotheses imported
# before the field existed stay what they were.
_FINGERPRINT_WHEN_GIVEN = ("confirmed", "method", "generation_round")
SCORE_FIELDS = ("task", "hypothesis", "judge", "judge_company", "score", "reason")
FIELDS = {TASKS: TASK_FIELDS, HYPOTHESES: HYPOTHESIS_FIELDS, SCORES: SCORE_FIELDS, **ANALYSIS_FIELDS}
REQUIRED = {
    TASKS: ("key", "question", "reference_statement"),
    # selected too, for the hypotheses of the main generation (_check_selected).
    HYPOTHESES: ("task", "id", "generator", "generator_company", "statement"),
    SCORES: ("task", "hypothesis", "judge", "score"),
    **ANALYSIS_REQUIRED,
}
# In CSV and XLSX the forecasts are one column per model.
FORECAST_COLUMN_PREFIX = "forecast:"
_TEXT_LIMIT = 200  # ids, names and companies
_WRITE_BATCH = 1000
BENCHMARK_FILE = TableFile(
    fields=FIELDS,
    required=REQUIRED,
    csv_tables=(
        *ANALYSIS_CSV_TABLES,
        (SCORES, frozenset({"hypothesis", "judge", "score"})),
        (HYPOTHESES, frozenset({"task", "id", "statement"})),
        (TASKS, frozenset({"key", "question"})),
    ),
    holds="tasks, hypotheses, scores or the analyses' tables",
    json_lists="“tasks”, “hypotheses”, “scores” and/or the analyses' lists",
    json_keys=", ".join(f"“{table}”" for table in TABLES),
    csv_header_rule="a tasks table needs the columns key and question, a hypotheses table the columns task, id and "
    "statement, a scores table the columns hypothesis, judge and score; the analyses' tables are named in "
    "docs/analysis.md (comma-separated, header on the first line).",
    sheet_rule="its sheets must be named " + ", ".join(f"“{table}”" for table in TABLES) + ".",
    empty="The file holds no tasks, no hypotheses and no scores.",
    keyed_columns={
        HYPOTHESES: KeyedColumns(field="forecasts", prefix=FORECAST_COLUMN_PREFIX, label="forecast", key_name="model")
    },
)
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}


@dataclass(frozen=True)
class BenchmarkImportResult:
    tasks: int  # records in the file
    hypotheses: int
    scores: int
    new_tasks: int  # research tasks created by this import
    new_hypotheses: int
    new_scores: int
    new_judges: int
    already_imported: bool
    analysis_records: int = 0  # rows of the analyses' tables in the file
    new_analysis_records: int = 0


def hypothesis_content_sha256(record: dict) -> str:
    """sha256 of an imported hypothesis: the canonical JSON of its HYPOTHESIS_FIELDS (task a key), those of
    _FINGERPRINT_WHEN_GIVEN only when they hold a value."""
    return _sha256_json(
        {
            name: record[name]
            for name in HYPOTHESIS_FIELDS
            if name not in _FINGERPRINT_WHEN_GIVEN or record.get(name) not in (None, "")
        }
    )


def benchmark_import_file(*, benchmark: BenchmarkSet, filename: str, content: bytes, user) -> BenchmarkImportResult:
    sha256 = hashlib.sha256(content).hexdigest()
    previous = BenchmarkImport.objects.filter(benchmark=benchmark, sha256=sha256).first()
    if previous:
        return _repeated(previous)
    file_format, records, problems = _read_and_check_file(filename, content)
    with refused_when_raced(), transaction.atomic():
        # The set's row is the lock: two imports into one set are checked and written one after the other.
        benchmark = BenchmarkSet.objects.select_for_update().get(pk=benchmark.pk)
        previous = BenchmarkImport.objects.filter(benchmark=benchmark, sha256=sha256).first()
        if previous:
            return _repeated(previous)
        plan = _Plan(benchmark, records)
        problems += plan.check()
        if problems:
            raise ImportInvalid(BENCHMARK_FILE.in_file_order(problems))
        batch = BenchmarkImport.objects.create(
            benchmark=benchmark,
            **batch_fields(filename=filename, file_format=file_format, sha256=sha256, user=user),
            task_count=len(records[TASKS]),
            hypothesis_count=len(records[HYPOTHESES]),
            score_count=len(records[SCORES]),
            analysis_record_count=sum(len(records[table]) for table in ANALYSIS_FIELDS),
        )
        counts = plan.write(batch)
        # Here, once for every table the file may hold (the analyses' optional tables included).
        benchmark_set_touch(benchmark_id=benchmark.pk)
    return BenchmarkImportResult(
        tasks=len(records[TASKS]),
        hypotheses=len(records[HYPOTHESES]),
        scores=len(records[SCORES]),
        already_imported=False,
        analysis_records=batch.analysis_record_count,
        **counts,
    )


def _repeated(batch: BenchmarkImport) -> BenchmarkImportResult:
    return BenchmarkImportResult(
        tasks=batch.task_count,
        hypotheses=batch.hypothesis_count,
        scores=batch.score_count,
        new_tasks=0,
        new_hypotheses=0,
        new_scores=0,
        new_judges=0,
        already_imported=True,
        analysis_records=batch.analysis_record_count,
    )


# Reading the file ------------------------------------------------------------------------------------


def _read_and_check_file(filename: str, content: bytes):
    """(format, {table: clean records}, problems): every problem the file shows by itself.

    Raises ImportInvalid at once when the file cannot be read at all."""
    file_format, rows, problems = BENCHMARK_FILE.read(filename, content)
    records = {TASKS: _clean_tasks(rows.get(TASKS, []), problems)}
    for table in TABLES[1:]:
        records[table] = _clean_rows(table, rows.get(table, []), problems)
    _check_selected(records[HYPOTHESES], problems)
    _check_within_file(records, problems)
    return file_format, records, problems


# Cleaning values ---------------------------------------------------------------------------------------


def _clean_tasks(rows, problems: list) -> list[dict]:
    """The cohort import's task cleaning, and a reference statement, which every benchmark task needs."""
    records = _clean_table(TASKS, rows, problems)
    flagged = {(p["row"], p["field"]) for p in problems if p["table"] == TASKS}
    for record in records:
        if not record["reference_statement"] and (record["row"], "reference_statement") not in flagged:
            message = "reference_statement is required: the judges compare every hypothesis with it."
            problems.append(problem(TASKS, record["row"], "reference_statement", message))
    return records


def _clean_bool(value):
    """True/False, yes/no or 1/0 (JSON booleans, cells or text); blank is None."""
    if isinstance(value, bool):
        return value, None
    if value is None:
        return None, None
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value), None
    text = as_text(value)
    if text == "":
        return None, None
    if text is not None and text.lower() in _TRUE | _FALSE:
        return text.lower() in _TRUE, None
    return None, f"“{value}” is not a yes/no value; write true or false."


def _clean_forecasts(value):
    """{model: True, False or None}. A JSON object in JSON files; the forecast:<model> columns elsewhere."""
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, "Must be an object of model → true, false or null."
    forecasts, problems = {}, []
    for model, vote in value.items():
        name = model.strip() if isinstance(model, str) else ""
        if not name or len(name) > _TEXT_LIMIT:
            problems.append(f"the model name “{model}” must be 1–{_TEXT_LIMIT} characters")
            continue
        cleaned, message = _clean_bool(vote)
        if message:
            problems.append(f"{name}: {message}")
        forecasts[name] = cleaned
    return forecasts, ("; ".join(problems) + ".") if problems else None


def _clean_score(value):
    text = as_text(value) if isinstance(value, str) else None
    if text is not None:
        try:
            value = int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            return None, f"“{text}” is not a score; write a whole number from 0 to 5."
    try:
        return judge_score(value), None
    except ValueError:
        return None, f"“{value}” is not a score; write a whole number from 0 to 5."


_CLEANERS = {
    "first_stage": _clean_bool,
    "selected": _clean_bool,
    "confirmed": _clean_bool,
    "forecasts": _clean_forecasts,
    "score": _clean_score,
    "probability": clean_probability,
    "answer": _clean_bool,
    "instruction": clean_instruction,
    "direction": clean_direction,
    "hint_score": clean_number,
    "generation_round": clean_round,
    **dict.fromkeys(DIMENSIONS, clean_quality),
    "found": clean_whole,
    "position": clean_whole,
    "final": _clean_bool,
    "searched_on": _clean_date,
    "status": clean_status,
    "sources": clean_sources,
}
# Long texts; every other text field is an id, a name or a company.
_FREE_TEXT = {"statement", "mechanism", "prediction", "reason", *ANALYSIS_FREE_TEXT}
_FREE_TEXT_LIMIT = 8000  # README "Benchmark sets"


def _clean_rows(table: str, rows, problems: list) -> list[dict]:
    """Records with clean values (and their row number); a value with a problem is left empty."""
    return clean_rows(
        table, rows, problems, fields=FIELDS, required=REQUIRED, cleaners=_CLEANERS, max_length=_max_length
    )


def _max_length(table: str, name: str) -> int | None:
    return _FREE_TEXT_LIMIT if name in _FREE_TEXT else _TEXT_LIMIT


def _by_hypothesis(*names: str):
    return lambda r: (r["task"], r["hypothesis"], *(r[name] for name in names))


def _check_selected(records: list[dict], problems: list) -> None:
    """A hypothesis of the first round's one-request generation needs its selection; one of another method or a
    re-generation, which only the comparison of generation methods reads, may leave it empty
    (docs/analysis.md#generation-methods)."""
    flagged = {(p["row"], p["field"]) for p in problems if p["table"] == HYPOTHESES}
    for record in records:
        main = record["method"] in ("", ONE_REQUEST) and record["generation_round"] in (None, 1)
        if main and record["selected"] is None and (record["row"], "selected") not in flagged:
            message = (
                "selected is required (a hypothesis of another generation method or a re-generation may leave it "
                "empty)."
            )
            problems.append(problem(HYPOTHESES, record["row"], "selected", message))


def _check_within_file(records: dict, problems: list) -> None:
    of_hypothesis = "for hypothesis “{0[1]}” of task “{0[0]}”"
    keyed = (
        (TASKS, lambda r: r["key"], "key", "The task key “{}”"),
        (HYPOTHESES, lambda r: (r["task"], r["id"]), "id", "The hypothesis “{0[1]}” of task “{0[0]}”"),
        (SCORES, _by_hypothesis("judge"), "judge", "The score of judge “{0[2]}” " + of_hypothesis),
        (QUALITY_SCORES, _by_hypothesis("judge"), "judge", "The quality scores of judge “{0[2]}” " + of_hypothesis),
        (PROBABILITIES, _by_hypothesis("model"), "model", "The probability of “{0[2]}” " + of_hypothesis),
        (REPEAT_FORECASTS, _by_hypothesis("model"), "model", "The repeat forecast of “{0[2]}” " + of_hypothesis),
        (
            INSTRUCTION_FORECASTS,
            _by_hypothesis("instruction", "model"),
            "model",
            "The answer of “{0[3]}” to the {0[2]} instruction " + of_hypothesis,
        ),
        (DIRECTIONS, _by_hypothesis(), "hypothesis", "The direction label " + of_hypothesis),
        (FORECASTERS, lambda r: r["model"], "model", "The forecaster “{}”"),
        (HINTS, lambda r: r["task"], "task", "The hint score of task “{}”"),
        (SELECTION_RECORDS, lambda r: r["pmid"], "pmid", "The record “{}”"),
        (
            EXCLUDED_SETS,
            excluded_set_key,
            "generator",
            "The left-out set of “{0[1]}” ({0[2]}, round {0[3]}) for task “{0[0]}”",
        ),
    )
    for table, key_of, field, subject in keyed:
        first_row: dict[str | tuple, int] = {}  # key → the row it is first on
        for record in records[table]:
            key = key_of(record)
            if all(key if isinstance(key, tuple) else (key,)) and key in first_row:
                message = f"{subject.format(key)} is given twice in this file (first on row {first_row[key]})."
                problems.append(problem(table, record["row"], field, message))
            first_row.setdefault(key, record["row"])
    companies: dict[str, str] = {}  # judge → the company first given for it
    for table in (SCORES, QUALITY_SCORES):
        for record in records[table]:
            if record["judge"] and record["judge_company"]:
                first = companies.setdefault(record["judge"], record["judge_company"])
                if company_key(first) != company_key(record["judge_company"]):
                    message = (
                        f"The judge “{record['judge']}” is given the companies “{first}” and "
                        f"“{record['judge_company']}”."
                    )
                    problems.append(problem(table, record["row"], "judge_company", message))


# Checking against the database and writing ------------------------------------------------------------


class _Plan:
    """What the file adds to the set, checked against what the set and the database already hold."""

    def __init__(self, benchmark: BenchmarkSet, records: dict):
        self.benchmark = benchmark
        self.records = records
        self.set_tasks = {
            bt.task.key: bt for bt in BenchmarkTask.objects.filter(benchmark=benchmark).select_related("task")
        }
        self.judges = {judge.name: judge for judge in Judge.objects.filter(benchmark=benchmark)}
        self.task_pks: dict[str, int] = {}
        self.new_hypotheses: list[dict] = []
        self.new_scores: list[dict] = []
        self.new_quality_scores: list[dict] = []
        self.new_judges: dict[str, str] = {}  # name → company, in order of first appearance

    def check(self) -> list[dict]:
        tasks, hypotheses, scores = (self.records[table] for table in (TASKS, HYPOTHESES, SCORES))
        problems, self.task_pks, _ = _check_against_database(tasks, [])
        file_tasks = {record["key"] for record in tasks}
        existing = {
            (h.benchmark_task.task.key, h.key): h
            for h in BenchmarkHypothesis.objects.filter(benchmark=self.benchmark).select_related("benchmark_task__task")
        }
        for record in hypotheses:
            if record["task"] and record["task"] not in file_tasks and record["task"] not in self.set_tasks:
                message = f"Unknown task “{record['task']}”: it is neither in this file nor in the set."
                problems.append(problem(HYPOTHESES, record["row"], "task", message))
                continue
            present = existing.get((record["task"], record["id"]))
            if present is None:
                self.new_hypotheses.append(record)
            elif present.content_sha256 != hypothesis_content_sha256(record):
                source = "a screening run of the set" if present.hypothesis_id else "an earlier import"
                message = (
                    f"The set already has a hypothesis “{record['id']}” of this task, "
                    f"from {source}, with different content."
                )
                problems.append(problem(HYPOTHESES, record["row"], "id", message))

        known_hypotheses = {(record["task"], record["id"]) for record in hypotheses} | set(existing)
        known_scores = {
            (s.judge.name, s.hypothesis.benchmark_task.task.key, s.hypothesis.key): s.score
            for s in JudgeScore.objects.filter(judge__benchmark=self.benchmark).select_related(
                "judge", "hypothesis__benchmark_task__task"
            )
        }
        self._check_judged(SCORES, scores, known_hypotheses, known_scores, self.new_scores, problems)
        known_quality = {
            (s.judge.name, s.hypothesis.benchmark_task.task.key, s.hypothesis.key): tuple(
                getattr(s, dimension) for dimension in DIMENSIONS
            )
            for s in QualityScore.objects.filter(judge__benchmark=self.benchmark).select_related(
                "judge", "hypothesis__benchmark_task__task"
            )
        }
        self._check_judged(
            QUALITY_SCORES,
            self.records[QUALITY_SCORES],
            known_hypotheses,
            known_quality,
            self.new_quality_scores,
            problems,
        )
        self.analysis = AnalysisInputsPlan(
            benchmark=self.benchmark,
            records=self.records,
            file_tasks=file_tasks,
            set_tasks=self.set_tasks,
            known_hypotheses=known_hypotheses,
            existing_hypotheses=existing,
        )
        problems += self.analysis.check()
        return problems

    def _check_judged(self, table: str, records, known_hypotheses, known: dict, new: list, problems: list) -> None:
        """Scores of judges (0–5 matches, or 1–10 quality scores): known hypotheses, judges with their companies, and
        never a different value for what a judge already gave."""
        for record in records:
            row, name, company = record["row"], record["judge"], record["judge_company"]
            if record["task"] and (record["task"], record["hypothesis"]) not in known_hypotheses:
                message = (
                    f"Unknown hypothesis “{record['hypothesis']}” of task “{record['task']}”: "
                    "it is neither in this file nor in the set."
                )
                problems.append(problem(table, row, "hypothesis", message))
                continue
            judge = self.judges.get(name)
            if judge is not None and company and company_key(company) != company_key(judge.company):
                message = f"The judge “{name}” of this set is from “{judge.company}”, not “{company}”."
                problems.append(problem(table, row, "judge_company", message))
            elif judge is None and name not in self.new_judges:
                if not company:
                    message = f"The set has no judge “{name}”: add the judge first, or give its judge_company here."
                    problems.append(problem(table, row, "judge", message))
                    continue
                self.new_judges[name] = company
            if table == SCORES:
                given, complete = record["score"], record["score"] is not None
            else:
                given = tuple(record[dimension] for dimension in DIMENSIONS)
                complete = None not in given
            previous = known.get((name, record["task"], record["hypothesis"]))
            if previous is None:
                new.append(record)
            elif complete and previous != given:
                message = f"The judge “{name}” already gave this hypothesis {previous}; scores are never overwritten."
                problems.append(problem(table, row, "score" if table == SCORES else DIMENSIONS[0], message))

    def write(self, batch: BenchmarkImport) -> dict:
        tasks = self.records[TASKS]
        new_tasks = [
            ResearchTask(**{name: r[name] for name in TASK_FIELDS}, content_sha256=task_content_sha256(r))
            for r in tasks
            if r["key"] not in self.task_pks
        ]
        ResearchTask.objects.bulk_create(new_tasks, batch_size=_WRITE_BATCH)
        new_keys = [task.key for task in new_tasks]
        task_pks = self.task_pks | dict(_fetch_in(ResearchTask.objects.values_list("key", "pk"), "key", new_keys))

        position = max((bt.position for bt in self.set_tasks.values()), default=0)
        joining = [record["key"] for record in tasks if record["key"] not in self.set_tasks]
        BenchmarkTask.objects.bulk_create(
            [
                BenchmarkTask(benchmark=self.benchmark, task_id=task_pks[key], position=position + offset)
                for offset, key in enumerate(joining, start=1)
            ]
        )
        set_tasks = {
            bt.task.key: bt for bt in BenchmarkTask.objects.filter(benchmark=self.benchmark).select_related("task")
        }

        last_positions = (
            BenchmarkHypothesis.objects.filter(benchmark=self.benchmark)
            .values("benchmark_task__task__key")
            .annotate(last=Max("position"))
            .values_list("benchmark_task__task__key", "last")
        )
        next_position = {key: 0 for key in set_tasks} | dict(last_positions)
        hypotheses = []
        for record in self.new_hypotheses:
            next_position[record["task"]] += 1
            hypotheses.append(
                BenchmarkHypothesis(
                    benchmark=self.benchmark,
                    benchmark_task=set_tasks[record["task"]],
                    key=record["id"],
                    position=next_position[record["task"]],
                    generator=record["generator"],
                    generator_company=record["generator_company"],
                    statement=record["statement"],
                    mechanism=record["mechanism"],
                    prediction=record["prediction"],
                    forecasts=record["forecasts"],
                    first_stage=record["first_stage"],
                    selected=record["selected"],
                    confirmed=record["confirmed"],
                    method=record["method"],
                    generation_round=record["generation_round"],
                    content_sha256=hypothesis_content_sha256(record),
                    import_batch=batch,
                )
            )
        BenchmarkHypothesis.objects.bulk_create(hypotheses, batch_size=_WRITE_BATCH)

        judge_position = max((judge.position for judge in self.judges.values()), default=0)
        for offset, (name, company) in enumerate(self.new_judges.items(), start=1):
            self.judges[name] = Judge.objects.create(
                benchmark=self.benchmark, name=name, company=company, position=judge_position + offset
            )
        hypothesis_pks = {
            (task_key, key): pk
            for task_key, key, pk in BenchmarkHypothesis.objects.filter(benchmark=self.benchmark).values_list(
                "benchmark_task__task__key", "key", "pk"
            )
        }
        JudgeScore.objects.bulk_create(
            [
                JudgeScore(
                    judge=self.judges[record["judge"]],
                    hypothesis_id=hypothesis_pks[(record["task"], record["hypothesis"])],
                    score=record["score"],
                    reason=record["reason"],
                    import_batch=batch,
                )
                for record in self.new_scores
            ],
            batch_size=_WRITE_BATCH,
        )
        analysis_records = quality_scores_write(batch, self.new_quality_scores, self.judges, hypothesis_pks)
        analysis_records += self.analysis.write(batch, hypothesis_pks)
        return {
            "new_tasks": len(new_tasks),
            "new_hypotheses": len(hypotheses),
            "new_scores": len(self.new_scores),
            "new_judges": len(self.new_judges),
            "new_analysis_records": analysis_records,
        }
