"""The tables of a set's import that only the analyses read (docs/analysis.md#importing-a-set-made-elsewhere):
forecasters' companies, numerical forecasts, the forecasts of a re-run, the forecasts under each instruction, the
statements' direction labels, task hint scores, key elements of the reference statements,
originality/feasibility/clarity scores and the task-selection log.
forecasters' companies, numerical forecasts, the forecasts of a re-run, task hint scores, key elements of the
reference statements, originality/feasibility/clarity scores, the task-selection log and the generation sets left out
for refusals or cut replies.

reviewapp.benchmarks.services.imports reads, cleans and checks the file as a whole and calls the plan here inside
its transaction: every problem found here joins the file's problems, so a file with any problem imports nothing.
Records already in the set are reused when equal and refused when different, never overwritten.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from reviewapp.analysis.judges import company_key
from reviewapp.analysis.originality import DIMENSIONS, QUALITY_SCALE
from reviewapp.benchmarks.models import (
    ONE_REQUEST,
    BenchmarkHypothesis,
    BenchmarkImport,
    BenchmarkSet,
    BenchmarkTask,
    Direction,
    ExcludedGenerationSet,
    Forecaster,
    Judge,
    QualityScore,
    TaskSelectionLog,
    TaskSelectionRecord,
)
from reviewapp.services.tabular_files import as_text, problem

FORECASTERS = "forecasters"
PROBABILITIES = "probabilities"
REPEAT_FORECASTS = "repeat_forecasts"
INSTRUCTION_FORECASTS = "instruction_forecasts"
DIRECTIONS = "directions"
HINTS = "hints"
KEY_ELEMENTS = "key_elements"
QUALITY_SCORES = "quality_scores"
SELECTION_LOG = "selection_log"
SELECTION_RECORDS = "selection_records"
EXCLUDED_SETS = "excluded_sets"
ANALYSIS_FIELDS = {
    FORECASTERS: ("model", "company"),
    PROBABILITIES: ("task", "hypothesis", "model", "probability"),
    REPEAT_FORECASTS: ("task", "hypothesis", "model", "answer"),
    INSTRUCTION_FORECASTS: ("task", "hypothesis", "instruction", "model", "answer"),
    DIRECTIONS: ("task", "hypothesis", "direction"),
    HINTS: ("task", "hint_score"),
    KEY_ELEMENTS: ("task", "element"),
    QUALITY_SCORES: ("task", "hypothesis", "judge", "judge_company", *DIMENSIONS),
    SELECTION_LOG: ("query", "salt", "found", "searched_on"),
    SELECTION_RECORDS: ("pmid", "status", "reason", "position", "final", "task"),
    EXCLUDED_SETS: ("task", "generator", "method", "generation_round", "reason", "note"),
}
ANALYSIS_REQUIRED = {
    FORECASTERS: ("model", "company"),
    PROBABILITIES: ("task", "hypothesis", "model", "probability"),
    REPEAT_FORECASTS: ("task", "hypothesis", "model"),
    INSTRUCTION_FORECASTS: ("task", "hypothesis", "instruction", "model"),
    DIRECTIONS: ("task", "hypothesis"),
    HINTS: ("task", "hint_score"),
    KEY_ELEMENTS: ("task", "element"),
    QUALITY_SCORES: ("task", "hypothesis", "judge", *DIMENSIONS),
    SELECTION_LOG: ("query", "salt", "found"),
    SELECTION_RECORDS: ("pmid", "status"),
    EXCLUDED_SETS: ("task", "generator", "reason"),
}
# The columns that tell a CSV file holds the table, checked before the main tables' (their columns overlap).
ANALYSIS_CSV_TABLES = (
    (SELECTION_RECORDS, frozenset({"pmid", "status"})),
    (SELECTION_LOG, frozenset({"query", "salt", "found"})),
    (EXCLUDED_SETS, frozenset({"task", "generator", "reason"})),
    (QUALITY_SCORES, frozenset({"hypothesis", "judge", "originality"})),
    (PROBABILITIES, frozenset({"hypothesis", "model", "probability"})),
    (INSTRUCTION_FORECASTS, frozenset({"hypothesis", "instruction", "model"})),
    (DIRECTIONS, frozenset({"hypothesis", "direction"})),
    (REPEAT_FORECASTS, frozenset({"hypothesis", "model", "answer"})),
    (HINTS, frozenset({"task", "hint_score"})),
    (KEY_ELEMENTS, frozenset({"task", "element"})),
    (FORECASTERS, frozenset({"model", "company"})),
)
# The fields whose values are free text (the rest are ids, names and companies).
ANALYSIS_FREE_TEXT = {"query", "element", "reason", "note"}
STATUSES = tuple(TaskSelectionRecord.Status.values)
# The forecast instructions (docs/protocol.md#forecast-designs): the short question (five hypotheses a request), the
# detailed instruction and the single-hypothesis question.
INSTRUCTIONS = ("short", "detailed", "single")
UNLABELLED = "unlabelled"
EXCLUSION_REASONS = tuple(ExcludedGenerationSet.Reason.values)


def clean_probability(value):
    number, message = clean_number(value)
    if message or number is None:
        return None, message
    if not 0 <= number <= 1:
        return None, f"“{value}” is not a probability; write a number from 0 to 1."
    return number, None


def clean_number(value):
    if isinstance(value, bool):
        return None, f"“{value}” is not a number."
    if isinstance(value, int | float):
        return float(value), None
    text = as_text(value)
    if text == "":
        return None, None
    try:
        return float(text or ""), None
    except ValueError:
        return None, f"“{value}” is not a number."


def clean_whole(value):
    """A whole number ≥ 0 (integral floats from spreadsheets accepted); blank is None."""
    number, message = clean_number(value)
    if message or number is None:
        return None, message
    if number != int(number) or number < 0:
        return None, f"“{value}” is not a whole number of 0 or more."
    return int(number), None


def clean_round(value):
    """A generation round: a whole number from 1 (the first generation); blank is None."""
    number, message = clean_whole(value)
    if message or number is None:
        return None, message
    if number < 1:
        return None, f"“{value}” is not a generation round; write 1 for the first generation, 2 for a re-generation."
    return number, None


def excluded_set_key(record: dict) -> tuple[str, str, str, int]:
    """(task, generator, method, round) of an excluded_sets record: blank method one request, blank round the first."""
    return record["task"], record["generator"], record["method"] or ONE_REQUEST, record["generation_round"] or 1


def clean_quality(value):
    number, message = clean_whole(value)
    if message or number is None:
        return None, message
    if number not in QUALITY_SCALE:
        return None, f"“{value}” is not a score; write a whole number from 1 to 10."
    return number, None


def clean_instruction(value):
    text = (as_text(value) or "").lower()
    if text in INSTRUCTIONS:
        return text, None
    return "", f"“{value}” is not an instruction; write {', '.join(INSTRUCTIONS[:-1])} or {INSTRUCTIONS[-1]}."


def clean_direction(value):
    """favourable or unfavourable; blank or “unlabelled” is the rule's absence of a label ("")."""
    text = (as_text(value) or "").lower()
    if text in Direction.values:
        return text, None
    if text in ("", UNLABELLED):
        return "", None
    return "", f"“{value}” is not a direction label; write favourable, unfavourable or unlabelled (or leave it blank)."


def clean_status(value):
    text = (as_text(value) or "").lower()
    if text in STATUSES:
        return text, None
    return "", f"“{value}” is not a status; write {' or '.join(STATUSES)}."


def _hypothesis_key(record: dict) -> tuple[str, str]:
    return record["task"], record["hypothesis"]


@dataclass
class AnalysisInputsPlan:
    """What the file's analysis tables add to the set, checked against the file's own tasks and hypotheses and
    against what the set already holds."""

    benchmark: BenchmarkSet
    records: dict
    file_tasks: set[str]
    set_tasks: dict[str, BenchmarkTask]
    known_hypotheses: set[tuple[str, str]]
    existing_hypotheses: dict[tuple[str, str], BenchmarkHypothesis]
    new: dict[str, list[dict]] = field(default_factory=dict)

    def check(self) -> list[dict]:
        problems: list[dict] = []
        self._check_forecasters(problems)
        for table, stored, value_field in (
            (PROBABILITIES, "probabilities", "probability"),
            (REPEAT_FORECASTS, "repeat_forecasts", "answer"),
        ):
            self._check_per_model(table, stored, value_field, problems)
        self._check_instruction_forecasts(problems)
        self._check_directions(problems)
        self._check_hints(problems)
        self._check_key_elements(problems)
        self._check_selection_log(problems)
        self._check_excluded_sets(problems)
        return problems

    def _known_task(self, table: str, record: dict, problems: list) -> bool:
        if record["task"] and record["task"] not in self.file_tasks and record["task"] not in self.set_tasks:
            message = f"Unknown task “{record['task']}”: it is neither in this file nor in the set."
            problems.append(problem(table, record["row"], "task", message))
            return False
        return True

    def _check_forecasters(self, problems: list) -> None:
        existing = {f.name: f.company for f in Forecaster.objects.filter(benchmark=self.benchmark)}
        self.new[FORECASTERS] = []
        for record in self.records[FORECASTERS]:
            company = existing.get(record["model"])
            if company is None:
                self.new[FORECASTERS].append(record)
            elif company_key(company) != company_key(record["company"]):
                message = (
                    f"The forecaster “{record['model']}” of this set is from “{company}”, not “{record['company']}”."
                )
                problems.append(problem(FORECASTERS, record["row"], "company", message))

    def _check_per_model(self, table: str, stored: str, value_field: str, problems: list) -> None:
        self.new[table] = []
        for record in self.records[table]:
            if not record["task"]:
                continue
            if _hypothesis_key(record) not in self.known_hypotheses:
                message = (
                    f"Unknown hypothesis “{record['hypothesis']}” of task “{record['task']}”: "
                    "it is neither in this file nor in the set."
                )
                problems.append(problem(table, record["row"], "hypothesis", message))
                continue
            present = self.existing_hypotheses.get(_hypothesis_key(record))
            values = getattr(present, stored) if present is not None else {}
            if record["model"] not in values:
                self.new[table].append(record)
            elif values[record["model"]] != record[value_field]:
                message = (
                    f"The set already has {record['model']}'s {value_field} {values[record['model']]} for this "
                    "hypothesis; it is never overwritten."
                )
                problems.append(problem(table, record["row"], value_field, message))

    def _known_hypothesis(self, table: str, record: dict, problems: list) -> bool:
        if _hypothesis_key(record) in self.known_hypotheses:
            return True
        message = (
            f"Unknown hypothesis “{record['hypothesis']}” of task “{record['task']}”: "
            "it is neither in this file nor in the set."
        )
        problems.append(problem(table, record["row"], "hypothesis", message))
        return False

    def _check_instruction_forecasts(self, problems: list) -> None:
        self.new[INSTRUCTION_FORECASTS] = []
        for record in self.records[INSTRUCTION_FORECASTS]:
            if (
                not record["task"]
                or not record["instruction"]
                or not self._known_hypothesis(INSTRUCTION_FORECASTS, record, problems)
            ):
                continue
            present = self.existing_hypotheses.get(_hypothesis_key(record))
            answers = (present.instruction_forecasts if present is not None else {}).get(record["instruction"], {})
            if record["model"] not in answers:
                self.new[INSTRUCTION_FORECASTS].append(record)
            elif answers[record["model"]] != record["answer"]:
                message = (
                    f"The set already has {record['model']}'s answer {answers[record['model']]} to the "
                    f"{record['instruction']} instruction for this hypothesis; it is never overwritten."
                )
                problems.append(problem(INSTRUCTION_FORECASTS, record["row"], "answer", message))

    def _check_directions(self, problems: list) -> None:
        self.new[DIRECTIONS] = []
        for record in self.records[DIRECTIONS]:
            if not record["task"] or not self._known_hypothesis(DIRECTIONS, record, problems):
                continue
            present = self.existing_hypotheses.get(_hypothesis_key(record))
            if present is None or not present.direction:
                self.new[DIRECTIONS].append(record)
            elif present.direction != record["direction"]:
                message = f"The statement is already labelled {present.direction}; a label is never overwritten."
                problems.append(problem(DIRECTIONS, record["row"], "direction", message))

    def _check_hints(self, problems: list) -> None:
        self.new[HINTS] = []
        for record in self.records[HINTS]:
            if not self._known_task(HINTS, record, problems):
                continue
            present = self.set_tasks.get(record["task"])
            if present is None or present.hint_score is None:
                self.new[HINTS].append(record)
            elif present.hint_score != record["hint_score"]:
                message = f"The task already has the hint score {present.hint_score:g}; it is never overwritten."
                problems.append(problem(HINTS, record["row"], "hint_score", message))

    def _check_key_elements(self, problems: list) -> None:
        by_task: defaultdict[str, list[dict]] = defaultdict(list)
        for record in self.records[KEY_ELEMENTS]:
            if self._known_task(KEY_ELEMENTS, record, problems) and record["task"]:
                by_task[record["task"]].append(record)
        self.new[KEY_ELEMENTS] = []
        for task, records in by_task.items():
            elements = [record["element"] for record in records]
            present = self.set_tasks.get(task)
            if present is None or not present.key_elements:
                self.new[KEY_ELEMENTS].append({"task": task, "elements": elements})
            elif present.key_elements != elements:
                message = (
                    f"The task “{task}” already has {len(present.key_elements)} key elements, different from these; "
                    "they are never overwritten."
                )
                problems.append(problem(KEY_ELEMENTS, records[0]["row"], "element", message))

    def _check_selection_log(self, problems: list) -> None:
        logs, records = self.records[SELECTION_LOG], self.records[SELECTION_RECORDS]
        self.log = TaskSelectionLog.objects.filter(benchmark=self.benchmark).first()
        self.new_log = None
        if len(logs) > 1:
            for record in logs[1:]:
                message = "A set has one task-selection log: give one row."
                problems.append(problem(SELECTION_LOG, record["row"], None, message))
        if logs:
            given = logs[0]
            if self.log is None:
                self.new_log = given
            elif (self.log.query, self.log.salt, self.log.found, self.log.searched_on) != (
                given["query"],
                given["salt"],
                given["found"],
                given["searched_on"],
            ):
                message = "The set already has a different task-selection log; it is never overwritten."
                problems.append(problem(SELECTION_LOG, given["row"], None, message))
        if records and self.log is None and self.new_log is None:
            message = "Records of a task selection need its log: give the selection_log table first (or with them)."
            problems.append(problem(SELECTION_RECORDS, records[0]["row"], None, message))
        stored = {r.pmid: r for r in self.log.records.all()} if self.log is not None else {}
        positions = {r.position: r.pmid for r in stored.values() if r.position is not None}
        self.new[SELECTION_RECORDS] = []
        for record in records:
            self._check_selection_record(record, stored, positions, problems)

    def _check_selection_record(self, record: dict, stored: dict, positions: dict, problems: list) -> None:
        row, status = record["row"], record["status"]
        if status == TaskSelectionRecord.Status.EXCLUDED:
            if not record["reason"]:
                problems.append(problem(SELECTION_RECORDS, row, "reason", "An excluded record needs its reason."))
            for name in ("position", "final", "task"):
                if record[name] not in (None, "", False):
                    message = f"An excluded record has no {name}: only candidates do."
                    problems.append(problem(SELECTION_RECORDS, row, name, message))
        elif status == TaskSelectionRecord.Status.CANDIDATE:
            if record["position"] is None or record["position"] < 1:
                message = "A candidate needs its position in the stored order (1, 2, …)."
                problems.append(problem(SELECTION_RECORDS, row, "position", message))
            elif positions.setdefault(record["position"], record["pmid"]) != record["pmid"]:
                message = f"Position {record['position']} is already held by {positions[record['position']]}."
                problems.append(problem(SELECTION_RECORDS, row, "position", message))
        present = stored.get(record["pmid"])
        if present is None:
            self.new[SELECTION_RECORDS].append(record)
            return
        given = (status, record["reason"], record["position"], bool(record["final"]), record["task"])
        if (present.status, present.reason, present.position, present.final, present.task_key) != given:
            message = f"The log already has the record {record['pmid']} with other values; it is never overwritten."
            problems.append(problem(SELECTION_RECORDS, row, "pmid", message))

    def _check_excluded_sets(self, problems: list) -> None:
        stored = {
            (e.benchmark_task.task.key, e.generator, e.method or ONE_REQUEST, e.generation_round): e
            for e in ExcludedGenerationSet.objects.filter(benchmark_task__benchmark=self.benchmark).select_related(
                "benchmark_task__task"
            )
        }
        self.new[EXCLUDED_SETS] = []
        for record in self.records[EXCLUDED_SETS]:
            row = record["row"]
            if record["reason"] and record["reason"] not in EXCLUSION_REASONS:
                message = (
                    f"“{record['reason']}” is not a reason for leaving a set out; write "
                    f"{' or '.join(EXCLUSION_REASONS)}."
                )
                problems.append(problem(EXCLUDED_SETS, row, "reason", message))
                continue
            if not self._known_task(EXCLUDED_SETS, record, problems) or not record["task"]:
                continue
            present = stored.get(excluded_set_key(record))
            if present is None:
                self.new[EXCLUDED_SETS].append(record)
            elif (present.reason, present.note) != (record["reason"], record["note"]):
                message = "The set already lists this generation set as left out, with another reason or note."
                problems.append(problem(EXCLUDED_SETS, row, "reason", message))

    def write(self, batch: BenchmarkImport, hypothesis_pks: dict[tuple[str, str], int]) -> int:
        """Write what is new; returns the number of records written."""
        written = 0
        Forecaster.objects.bulk_create(
            Forecaster(benchmark=self.benchmark, name=r["model"], company=r["company"]) for r in self.new[FORECASTERS]
        )
        written += len(self.new[FORECASTERS])
        for table, stored, value_field in (
            (PROBABILITIES, "probabilities", "probability"),
            (REPEAT_FORECASTS, "repeat_forecasts", "answer"),
        ):
            updates: defaultdict[int, dict] = defaultdict(dict)
            for record in self.new[table]:
                updates[hypothesis_pks[_hypothesis_key(record)]][record["model"]] = record[value_field]
            for hypothesis in BenchmarkHypothesis.objects.filter(pk__in=updates):
                setattr(hypothesis, stored, {**getattr(hypothesis, stored), **updates[hypothesis.pk]})
                hypothesis.save(update_fields=[stored])
            written += len(self.new[table])
        instruction_updates: defaultdict[int, list[dict]] = defaultdict(list)
        for record in self.new[INSTRUCTION_FORECASTS]:
            instruction_updates[hypothesis_pks[_hypothesis_key(record)]].append(record)
        for hypothesis in BenchmarkHypothesis.objects.filter(pk__in=instruction_updates):
            for record in instruction_updates[hypothesis.pk]:
                answers = hypothesis.instruction_forecasts.setdefault(record["instruction"], {})
                answers[record["model"]] = record["answer"]
            hypothesis.save(update_fields=["instruction_forecasts"])
        for record in self.new[DIRECTIONS]:
            BenchmarkHypothesis.objects.filter(pk=hypothesis_pks[_hypothesis_key(record)]).update(
                direction=record["direction"]
            )
        written += len(self.new[INSTRUCTION_FORECASTS]) + len(self.new[DIRECTIONS])
        tasks = {
            bt.task.key: bt for bt in BenchmarkTask.objects.filter(benchmark=self.benchmark).select_related("task")
        }
        for record in self.new[HINTS]:
            BenchmarkTask.objects.filter(pk=tasks[record["task"]].pk).update(hint_score=record["hint_score"])
        for entry in self.new[KEY_ELEMENTS]:
            BenchmarkTask.objects.filter(pk=tasks[entry["task"]].pk).update(key_elements=entry["elements"])
        written += len(self.new[HINTS]) + sum(len(entry["elements"]) for entry in self.new[KEY_ELEMENTS])
        log = self.log
        if self.new_log is not None:
            log = TaskSelectionLog.objects.create(
                benchmark=self.benchmark,
                query=self.new_log["query"],
                salt=self.new_log["salt"],
                found=self.new_log["found"],
                searched_on=self.new_log["searched_on"],
                import_batch=batch,
            )
            written += 1
        if log is not None:
            TaskSelectionRecord.objects.bulk_create(
                TaskSelectionRecord(
                    log=log,
                    pmid=r["pmid"],
                    status=r["status"],
                    reason=r["reason"],
                    position=r["position"],
                    final=bool(r["final"]),
                    task_key=r["task"],
                )
                for r in self.new[SELECTION_RECORDS]
            )
            written += len(self.new[SELECTION_RECORDS])
        ExcludedGenerationSet.objects.bulk_create(
            ExcludedGenerationSet(
                benchmark_task=tasks[r["task"]],
                generator=r["generator"],
                method=r["method"],
                generation_round=r["generation_round"] or 1,
                reason=r["reason"],
                note=r["note"],
                import_batch=batch,
            )
            for r in self.new[EXCLUDED_SETS]
        )
        written += len(self.new[EXCLUDED_SETS])
        return written


def quality_scores_write(batch: BenchmarkImport, records: list[dict], judges: dict[str, Judge], hypothesis_pks) -> int:
    QualityScore.objects.bulk_create(
        QualityScore(
            judge=judges[record["judge"]],
            hypothesis_id=hypothesis_pks[_hypothesis_key(record)],
            import_batch=batch,
            **{dimension: record[dimension] for dimension in DIMENSIONS},
        )
        for record in records
    )
    return len(records)
