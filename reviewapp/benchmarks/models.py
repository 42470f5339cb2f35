"""Benchmark sets: research tasks with reference statements, their hypotheses (from screening runs or imported with
their forecasts), the random control drawn before any forecast, judges and their scores
(docs/protocol.md#benchmark-sets).

The tables kept the names they had when these records belonged to the review app (see migrations/0001_initial.py).
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from screening.models import Run


def new_data_version() -> str:
    """A fresh version of a set's data: random, so that no other set, nor this set in a database made again from
    scratch, ever had it (a cache can outlive its database)."""
    return uuid.uuid4().hex


class BenchmarkSet(models.Model):
    """Research tasks with reference statements and the roster that screens them, analysed together."""

    class Design(models.TextChoices):
        """How the set's runs put its hypotheses to the forecasters (docs/protocol.md#benchmark-designs)."""

        POOLED = "pooled", "Pooled: the protocol's two-stage run, as public runs do it"
        SEED_001 = "seed-001", "The benchmark's: each generator apart, every forecaster on every hypothesis"

    # The screening run design each set design uses.
    RUN_DESIGN: dict[str, str] = {Design.POOLED: Run.Design.POOLED, Design.SEED_001: Run.Design.MATRIX}
    # The hypotheses each generator is asked for, part of the design: the protocol's ten, or the benchmark's five per
    # generator and task in one request (docs/protocol.md#benchmark-designs).
    GENERATION_COUNT: dict[str, int] = {Design.POOLED: 10, Design.SEED_001: 5}

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    # Without a roster the set runs on the default roster (the runs record the roster they used).
    roster = models.ForeignKey(
        "screening.Roster", null=True, blank=True, on_delete=models.SET_NULL, related_name="benchmark_sets"
    )
    design = models.CharField(max_length=10, choices=Design.choices, default=Design.POOLED)
    # The question the seed-001 design asks (a pooled set asks the protocol's short question).
    forecast_question = models.CharField(max_length=10, choices=Run.Question.choices, default=Run.Question.SHORT)
    # Every run of the set takes its shuffle seed from this one (see reviewapp.benchmarks.services.sets).
    seed = models.BigIntegerField()
    tasks = models.ManyToManyField("reviewapp.ResearchTask", through="BenchmarkTask", related_name="benchmark_sets")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True, help_text="when the set was first run")
    # Replaced in the same transaction as every write of what the statistics read
    # (reviewapp.benchmarks.services.versions.benchmark_set_touch): the statistics and their figures are cached under
    # it, so a cached page reads this row instead of the set's data.
    data_version = models.CharField(max_length=32, default=new_data_version, editable=False)

    class Meta:
        db_table = "reviewapp_benchmarkset"

    def __str__(self):
        return self.name


class BenchmarkTask(models.Model):
    """One task of a set and the screening run that generated and screened its hypotheses (if it was run here)."""

    benchmark = models.ForeignKey(BenchmarkSet, on_delete=models.CASCADE, related_name="benchmark_tasks")
    task = models.ForeignKey("reviewapp.ResearchTask", on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()
    run = models.OneToOneField(
        "screening.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="benchmark_task"
    )
    # Imported for the analyses (docs/analysis.md#hint-degree, #key-elements).
    hint_score = models.FloatField(null=True, blank=True, help_text="how strongly the question hints at the answer")
    key_elements = models.JSONField(default=list, blank=True, help_text="the reference statement's key elements")

    class Meta:
        db_table = "reviewapp_benchmarktask"
        constraints = [models.UniqueConstraint(fields=["benchmark", "task"], name="one_benchmark_task_per_task")]
        ordering = ["benchmark", "position", "pk"]

    def __str__(self):
        return f"{self.benchmark} / {self.task}"


class BenchmarkImport(models.Model):
    """One file imported into a set. Its sha256 makes re-importing the same file a no-op."""

    benchmark = models.ForeignKey(BenchmarkSet, on_delete=models.CASCADE, related_name="imports")
    filename = models.CharField(max_length=255)
    file_format = models.CharField(max_length=10)
    sha256 = models.CharField(max_length=64)
    task_count = models.PositiveIntegerField(default=0)
    hypothesis_count = models.PositiveIntegerField(default=0)
    score_count = models.PositiveIntegerField(default=0)
    analysis_record_count = models.PositiveIntegerField(default=0, help_text="rows of the analyses' tables")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "reviewapp_benchmarkimport"
        constraints = [models.UniqueConstraint(fields=["benchmark", "sha256"], name="one_import_per_file_per_set")]

    def __str__(self):
        return f"{self.filename} ({self.sha256[:12]})"


class Direction(models.TextChoices):
    """The favourable-direction rule's label of a statement (docs/analysis.md#favourable-direction-rule)."""

    FAVOURABLE = "favourable", "favourable"
    UNFAVOURABLE = "unfavourable", "unfavourable"


# The generation method of a hypothesis whose method is blank: the set's runs generate in one request.
ONE_REQUEST = "one request"


class BenchmarkHypothesis(models.Model):
    """One hypothesis of a set: a screening run's (read through `hypothesis`) or imported with its forecasts.

    The imported fields stay blank for a run's hypothesis: its text, author, forecasts and selection live on the
    screening record, which keeps changing while the run screens it.
    """

    benchmark = models.ForeignKey(BenchmarkSet, on_delete=models.CASCADE, related_name="hypotheses")
    benchmark_task = models.ForeignKey(BenchmarkTask, on_delete=models.CASCADE, related_name="hypotheses")
    # The hypothesis id within its task: the run's blind number (H1, H2…) or the imported id.
    key = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0)
    hypothesis = models.OneToOneField(
        "screening.Hypothesis", null=True, blank=True, on_delete=models.CASCADE, related_name="benchmark_entry"
    )
    # Imported hypotheses only.
    generator = models.CharField(max_length=200, blank=True)
    generator_company = models.CharField(max_length=200, blank=True)
    statement = models.TextField(blank=True)
    mechanism = models.TextField(blank=True)
    prediction = models.TextField(blank=True)
    forecasts = models.JSONField(default=dict, blank=True, help_text="model → true, false or null")
    first_stage = models.BooleanField(null=True, blank=True, help_text="the stage-1 model's yes, when known")
    selected = models.BooleanField(null=True, blank=True)
    # Imported for the analyses: numerical forecasts (model → 0–1), the forecasts of a re-run of the same requests
    # (model → true, false or null) and, for a statement with a known result, whether it was confirmed.
    probabilities = models.JSONField(default=dict, blank=True)
    repeat_forecasts = models.JSONField(default=dict, blank=True)
    confirmed = models.BooleanField(null=True, blank=True)
    # Imported for the instruction comparison: instruction ("short", "detailed", "single") → model → true, false or
    # null; and, for a statement of a 50/50 set, the favourable-direction rule's label (blank: unlabelled).
    instruction_forecasts = models.JSONField(default=dict, blank=True)
    direction = models.CharField(max_length=20, choices=Direction.choices, blank=True)
    # Imported for the generation methods (docs/analysis.md#generation-methods): how the hypothesis was generated
    # (blank: one request, as the set's runs generate) and in which generation round (blank: the first; 2 and on
    # re-generations of the same requests).
    method = models.CharField(max_length=200, blank=True, help_text="generation method")
    generation_round = models.PositiveSmallIntegerField(null=True, blank=True, help_text="1 first, 2… re-generation")
    content_sha256 = models.CharField(max_length=64, blank=True)
    import_batch = models.ForeignKey(BenchmarkImport, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        db_table = "reviewapp_benchmarkhypothesis"
        constraints = [
            models.UniqueConstraint(fields=["benchmark_task", "key"], name="one_benchmark_hypothesis_per_key"),
        ]
        ordering = ["benchmark_task__position", "position", "pk"]

    def __str__(self):
        return f"{self.benchmark_task} / {self.key}"


class RandomControlDraw(models.Model):
    """Random yes/no answers for a task's hypotheses, drawn before the pool is frozen and before any model forecast
    them (docs/protocol.md#drawn-answers).

    `sequence` is what the cryptographic generator drew, one answer per hypothesis, before any hypothesis had its
    place; when the pool is frozen (`frozen_at`) the n-th answer goes to the n-th hypothesis of the pool, and
    `answers` maps each hypothesis key to its answer. `hypotheses_sha256` fingerprints the frozen hypothesis set the
    answers belong to (see reviewapp.benchmarks.services.sets.frozen_set_sha256).
    """

    benchmark_task = models.OneToOneField(BenchmarkTask, on_delete=models.CASCADE, related_name="random_control")
    drawn_at = models.DateTimeField()
    frozen_at = models.DateTimeField(null=True, blank=True, help_text="when the pool was shuffled and numbered")
    hypotheses_sha256 = models.CharField(max_length=64, blank=True)
    hypothesis_count = models.PositiveIntegerField()
    sequence = models.JSONField(default=list)
    answers = models.JSONField(default=dict)
    generator = models.CharField(max_length=50, help_text="the cryptographic generator that drew the answers")

    class Meta:
        db_table = "reviewapp_randomcontroldraw"

    def __str__(self):
        return f"random control of {self.benchmark_task} at {self.drawn_at:%Y-%m-%d %H:%M:%S}"


class Judge(models.Model):
    """A judge of a set: a model endpoint or a named person, with the company the exclusion rule compares."""

    benchmark = models.ForeignKey(BenchmarkSet, on_delete=models.CASCADE, related_name="judges")
    name = models.CharField(max_length=200)
    company = models.CharField(max_length=200)
    endpoint = models.ForeignKey(
        "screening.ModelEndpoint", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The judges' listed order: Table S and every table show their scores in this order.
    position = models.PositiveIntegerField()

    class Meta:
        db_table = "reviewapp_judge"
        constraints = [models.UniqueConstraint(fields=["benchmark", "name"], name="one_judge_name_per_set")]
        ordering = ["benchmark", "position", "pk"]

    def __str__(self):
        return f"{self.name} ({self.company})"


class JudgeScore(models.Model):
    """One judge's 0–5 score of how well a hypothesis matches its task's reference statement. Hidden from reviewers."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="scores")
    hypothesis = models.ForeignKey(BenchmarkHypothesis, on_delete=models.CASCADE, related_name="judge_scores")
    score = models.PositiveSmallIntegerField()
    reason = models.TextField(blank=True)
    model_call = models.ForeignKey(
        "screening.ModelCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    import_batch = models.ForeignKey(BenchmarkImport, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "reviewapp_judgescore"
        constraints = [
            models.UniqueConstraint(fields=["judge", "hypothesis"], name="one_score_per_judge_hypothesis"),
            models.CheckConstraint(condition=Q(score__lte=5), name="judge_score_in_range"),
        ]

    def __str__(self):
        return f"{self.judge} → {self.hypothesis}: {self.score}"


class Forecaster(models.Model):
    """The company of a forecasting model of a set's imported hypotheses (a run's roster names its own)."""

    benchmark = models.ForeignKey(BenchmarkSet, on_delete=models.CASCADE, related_name="forecasters")
    name = models.CharField(max_length=200)
    company = models.CharField(max_length=200)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["benchmark", "name"], name="one_forecaster_name_per_set")]
        ordering = ["benchmark", "name"]

    def __str__(self):
        return f"{self.name} ({self.company})"


class QualityScore(models.Model):
    """One judge's 1–10 scores of a hypothesis's originality, feasibility and clarity
    (docs/analysis.md#originality-of-selected-and-excluded). Hidden from reviewers."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="quality_scores")
    hypothesis = models.ForeignKey(BenchmarkHypothesis, on_delete=models.CASCADE, related_name="quality_scores")
    originality = models.PositiveSmallIntegerField()
    feasibility = models.PositiveSmallIntegerField()
    clarity = models.PositiveSmallIntegerField()
    import_batch = models.ForeignKey(BenchmarkImport, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judge", "hypothesis"], name="one_quality_score_per_judge_hypothesis"),
            models.CheckConstraint(
                condition=Q(originality__gte=1, originality__lte=10)
                & Q(feasibility__gte=1, feasibility__lte=10)
                & Q(clarity__gte=1, clarity__lte=10),
                name="quality_scores_in_range",
            ),
        ]

    def __str__(self):
        return f"{self.judge} → {self.hypothesis}: {self.originality}/{self.feasibility}/{self.clarity}"


class TaskSelectionLog(models.Model):
    """How the set's tasks were found: the literature query, how many records it found, the salt that orders the
    candidates (docs/analysis.md#task-selection-log)."""

    benchmark = models.OneToOneField(BenchmarkSet, on_delete=models.CASCADE, related_name="selection_log")
    query = models.TextField()
    salt = models.CharField(max_length=200)
    found = models.PositiveIntegerField()
    searched_on = models.DateField(null=True, blank=True)
    import_batch = models.ForeignKey(BenchmarkImport, null=True, blank=True, on_delete=models.SET_NULL)

    def __str__(self):
        return f"task selection of {self.benchmark}"


class TaskSelectionRecord(models.Model):
    """One record the query found: excluded by the pre-filter (with its reason) or a candidate (with its position in
    the stored order, and whether it became a task)."""

    class Status(models.TextChoices):
        EXCLUDED = "excluded", "Excluded by the pre-filter"
        CANDIDATE = "candidate", "Candidate"

    log = models.ForeignKey(TaskSelectionLog, on_delete=models.CASCADE, related_name="records")
    pmid = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices)
    reason = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField(null=True, blank=True)
    final = models.BooleanField(default=False)
    task_key = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["log", "pmid"], name="one_selection_record_per_pmid")]
        ordering = ["log", "status", "position", "pmid"]

    def __str__(self):
        return f"{self.pmid} ({self.status})"


class ExcludedGenerationSet(models.Model):
    """One generator's set of hypotheses for one task, method and generation round, left out of the generation
    methods' sensitivity rows with its reason (docs/analysis.md#generation-methods). Hidden from reviewers."""

    class Reason(models.TextChoices):
        REFUSAL = "refusal", "The model refused to generate the set in every attempt"
        CUT_REPLY = "cut_reply", "A stored step holds a refusal or a reply cut off by a safety classifier"

    benchmark_task = models.ForeignKey(BenchmarkTask, on_delete=models.CASCADE, related_name="excluded_sets")
    generator = models.CharField(max_length=200)
    method = models.CharField(max_length=200, blank=True)
    generation_round = models.PositiveSmallIntegerField(default=1)
    reason = models.CharField(max_length=10, choices=Reason.choices)
    note = models.TextField(blank=True)
    import_batch = models.ForeignKey(BenchmarkImport, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark_task", "generator", "method", "generation_round"], name="one_exclusion_per_set"
            )
        ]
        ordering = ["benchmark_task", "generator", "generation_round", "method"]

    def __str__(self):
        return f"{self.benchmark_task} / {self.generator} / {self.method or ONE_REQUEST} / {self.generation_round}"
