"""Open Hypothesis runs, their hypotheses and forecasts."""

import uuid

from django.db import models
from django.db.models import Q

from reviewapp.core.claims import ClaimedWork, ClaimState

__all__ = ["Run", "RunWorkItem", "Hypothesis", "Forecast", "Translation", "RunBody", "PROTOCOL", "STEPS"]

PROTOCOL = "open-hypothesis-v2"
# The four steps a run reports, in order (a screening of the client's own hypotheses skips "generate").
STEPS = ("generate", "stage1", "stage2", "novelty")


class Run(models.Model):
    """One Open Hypothesis run (generation or the client's own hypotheses → two-stage forecast → literature)."""

    class Kind(models.TextChoices):
        GENERATE = "generate", "Generate and screen"
        SCREENING = "screening", "Screen the client's hypotheses"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        GENERATING = "generating", "Generating hypotheses"
        SCREENING_STAGE1 = "screening_stage1", "Stage 1 forecast"
        SCREENING_STAGE2 = "screening_stage2", "Stage 2 forecast"
        CHECKING_NOVELTY = "checking_novelty", "Checking the literature"
        COMPLETED = "completed", "Completed"
        FAILED_AT_GENERATE = "failed_at_generate", "Failed at generation"
        FAILED_AT_STAGE1 = "failed_at_stage1", "Failed at stage 1"
        FAILED_AT_STAGE2 = "failed_at_stage2", "Failed at stage 2"
        FAILED_AT_NOVELTY = "failed_at_novelty", "Failed at the literature check"

    class Language(models.TextChoices):
        EN = "en", "English"
        RU = "ru", "Russian"

    class Design(models.TextChoices):
        """How the hypotheses are put to the forecasters (docs/protocol.md#forecast-designs)."""

        POOLED = "pooled", "Pooled: one request per model, stage 2 asked about what stage 1 kept"
        MATRIX = "matrix", "Matrix: each generator's hypotheses apart, every forecaster on every hypothesis"

    class Question(models.TextChoices):
        """The question a matrix run asks (docs/protocol.md#forecast-designs); a pooled run asks the short one."""

        SHORT = "short", "Short question, five hypotheses a request"
        DETAILED = "detailed", "Detailed instruction, five hypotheses a request"
        SINGLE = "single", "Single-hypothesis question, one hypothesis a request"

    ACTIVE_STATUSES = (
        Status.QUEUED,
        Status.GENERATING,
        Status.SCREENING_STAGE1,
        Status.SCREENING_STAGE2,
        Status.CHECKING_NOVELTY,
    )
    # Statuses in which the run's selection is made (its first-round forecasts are all in).
    SELECTION_MADE_STATUSES = (Status.CHECKING_NOVELTY, Status.COMPLETED, Status.FAILED_AT_NOVELTY)
    # The step each working status runs, and the status a stop in that step ends in.
    STEP_OF_STATUS: dict[str, str] = {
        Status.GENERATING: "generate",
        Status.SCREENING_STAGE1: "stage1",
        Status.SCREENING_STAGE2: "stage2",
        Status.CHECKING_NOVELTY: "novelty",
    }
    FAILED_STATUS_OF_STEP = {
        "generate": Status.FAILED_AT_GENERATE,
        "stage1": Status.FAILED_AT_STAGE1,
        "stage2": Status.FAILED_AT_STAGE2,
        "novelty": Status.FAILED_AT_NOVELTY,
    }

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.GENERATE)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    protocol = models.CharField(max_length=40, default=PROTOCOL)
    question = models.TextField()
    background = models.TextField(blank=True)
    language = models.CharField(max_length=2, choices=Language.choices, default=Language.EN)
    # A keyed hash of the client's address: enough to count its runs, not enough to recover it.
    client_hash = models.CharField(max_length=64, blank=True)
    # Anyone with its id may read a public run (one started on the public page or API); any other run (a benchmark
    # set's) only coordinators and analysts (docs/protocol.md#reading-a-run).
    public = models.BooleanField(default=False)
    shuffle_seed = models.BigIntegerField()
    design = models.CharField(max_length=10, choices=Design.choices, default=Design.POOLED)
    forecast_question = models.CharField(max_length=10, choices=Question.choices, default=Question.SHORT)
    # How many hypotheses the generation request asks each generator for: the protocol's ten, or the design's own
    # (docs/protocol.md#generation).
    generation_count = models.PositiveSmallIntegerField(default=10)
    # When the hypotheses were shuffled and numbered: from then on the set the forecasters see is frozen.
    pooled_at = models.DateTimeField(null=True, blank=True)
    # The literature check counts only references published before this date (a benchmark set's run: its task's date).
    published_before = models.DateField(null=True, blank=True)
    # The endpoints the run used, by role, as they were when it started (rosters and endpoints may change later).
    roster = models.JSONField(default=dict)
    simulated = models.BooleanField(default=False, help_text="simulated endpoints produced (part of) its data")
    # Per step: state (pending, running, completed, failed, skipped) with start and end times.
    steps = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    # How many times the sweeper restarted a run that made no progress.
    resume_count = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_progress_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["client_hash", "created_at"]),
            models.Index(fields=["status", "last_progress_at"]),
        ]
        ordering = ["-created_at"]

    def __str__(self):
        return f"run {self.public_id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in self.ACTIVE_STATUSES


class RunWorkItem(ClaimedWork):
    """One unit of a run's work (one generator, one forecasting model, the literature step, the translation).

    Claimed and recorded through reviewapp.core.claims: a redelivered or superseded task cannot record anything twice.
    """

    class Step(models.TextChoices):
        GENERATE = "generate", "Generate"
        STAGE1 = "stage1", "Stage 1 forecast"
        STAGE2 = "stage2", "Stage 2 forecast"
        NOVELTY = "novelty", "Literature check"
        TRANSLATE = "translate", "Translation"
        # The run's forecast requests sent again, as they were, once its selection is made (round 2).
        REPEAT = "repeat", "Forecasts asked again"

    State = ClaimState

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="work_items")
    step = models.CharField(max_length=10, choices=Step.choices)
    # Position of the endpoint in the run's roster for this step.
    slot = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "step", "slot"], name="one_work_item_per_run_step_slot")]

    def __str__(self):
        return f"{self.run_id}:{self.step}:{self.slot} ({self.state})"


class Hypothesis(models.Model):
    """One hypothesis in a run, from a generator or from the client, with its stage outcomes."""

    class Stage1(models.TextChoices):
        DISCARDED = "discarded", "Discarded"
        KEPT = "kept", "Kept"
        NO_ANSWER = "no_answer", "No answer"

    class Verdict(models.TextChoices):
        REPORTED = "reported", "Reported"
        CONTRADICTED = "contradicted", "Contradicted"
        COMPONENTS_REPORTED = "components_reported", "Components reported"
        NOT_REPORTED = "not_reported", "Not reported"
        UNRESOLVED = "unresolved", "Unresolved"

    # Delivered: selected, and a literature verdict exists that is neither of these (docs/protocol.md#reading-a-run).
    NOT_DELIVERED_VERDICTS = (Verdict.REPORTED, Verdict.CONTRADICTED)

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="hypotheses")
    # Where it came from: "generator-<slot>" or "client", and its position in that source's list.
    source = models.CharField(max_length=20)
    source_index = models.PositiveSmallIntegerField()
    # The blind number and pool position, given when the pool is shuffled.
    label = models.CharField(max_length=8, blank=True)
    position = models.PositiveIntegerField(null=True, blank=True)
    author_endpoint = models.ForeignKey(
        "screening.ModelEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_name = models.CharField(max_length=200, blank=True)
    author_company = models.CharField(max_length=200, blank=True)
    author_simulated = models.BooleanField(default=False)
    statement = models.TextField()
    mechanism = models.TextField(blank=True)
    prediction = models.TextField(blank=True)
    domain_category = models.CharField(max_length=200, blank=True)
    stage1 = models.CharField(max_length=10, choices=Stage1.choices, blank=True)
    selected = models.BooleanField(default=False)
    literature_verdict = models.CharField(max_length=20, choices=Verdict.choices, blank=True)
    literature_evidence = models.TextField(blank=True)
    literature_reference = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "source", "source_index"], name="one_hypothesis_per_source_index"),
            models.UniqueConstraint(fields=["run", "label"], condition=~Q(label=""), name="one_hypothesis_per_label"),
        ]
        ordering = ["position", "source", "source_index"]

    def __str__(self):
        return f"{self.label or self.source}: {self.statement[:60]}"

    # The one rule of delivery, in Python for a loaded hypothesis and as a condition for the database;
    # tests/screening/test_runs_api.py holds the two to the same answer for every state.
    @property
    def delivered(self) -> bool:
        return (
            self.selected
            and self.literature_verdict != ""
            and self.literature_verdict not in self.NOT_DELIVERED_VERDICTS
        )

    @classmethod
    def delivered_condition(cls, prefix: str = "") -> Q:
        """`delivered` as a query condition, on the hypotheses themselves or (prefix "hypotheses__") through a
        relation."""
        return (
            Q(**{f"{prefix}selected": True})
            & ~Q(**{f"{prefix}literature_verdict": ""})
            & ~Q(**{f"{prefix}literature_verdict__in": cls.NOT_DELIVERED_VERDICTS})
        )

    @property
    def checking(self) -> bool:
        """Selected, and the literature check has not given its verdict yet."""
        return self.selected and self.literature_verdict == ""


class Forecast(models.Model):
    """One forecasting model's answer about one hypothesis in one stage.

    `vote` is the answer to the run's question (the protocol's boolean, or in a matrix run the answer to the question
    the run asks; null: no vote). The optional modes' answers are stored alongside it.
    """

    hypothesis = models.ForeignKey(Hypothesis, on_delete=models.CASCADE, related_name="forecasts")
    stage = models.PositiveSmallIntegerField()
    # 1: the run's forecasts, which decide its stages; 2: the same requests sent again
    # (docs/protocol.md#repeating-the-forecasts).
    round = models.PositiveSmallIntegerField(default=1)
    # The call whose reply gave this answer (the last protocol attempt of its request); null when none was made.
    model_call = models.ForeignKey(
        "screening.ModelCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    endpoint = models.ForeignKey("screening.ModelEndpoint", null=True, blank=True, on_delete=models.SET_NULL)
    # The model id the answer is reported under (the endpoint's model id when the run used it).
    model_key = models.CharField(max_length=200)
    vote = models.BooleanField(null=True)
    # Detailed instruction (docs/protocol.md#detailed-instruction).
    p_experimental_support = models.FloatField(null=True, blank=True)
    recommend_for_testing = models.BooleanField(null=True)
    detailed = models.JSONField(null=True, blank=True)
    # Single-hypothesis question (docs/protocol.md#single-hypothesis-question).
    single_vote = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["hypothesis", "stage", "model_key", "round"], name="one_forecast_per_model_stage_round"
            ),
            models.CheckConstraint(condition=Q(stage__in=[1, 2]), name="forecast_stage_is_1_or_2"),
            models.CheckConstraint(condition=Q(round__in=[1, 2]), name="forecast_round_is_1_or_2"),
        ]

    def __str__(self):
        return f"{self.model_key} on {self.hypothesis_id} (stage {self.stage}): {self.vote}"


class Translation(models.Model):
    """The rendering of a run's hypotheses in another language, made after the run completes."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="translations")
    language = models.CharField(max_length=2)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    # Label → {"statement", "mechanism", "prediction"} in the target language.
    hypotheses = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "language"], name="one_translation_per_language")]

    def __str__(self):
        return f"{self.run_id} in {self.language} ({self.state})"


class RunBody(models.Model):
    """The public API's body of a finished run in one language, rendered once and then served as it is.

    It is served only while the run's updated_at is the one it was rendered at. Every write to a run (a step, an
    item's result, a translation) moves the run's updated_at in the same transaction, so a change made by any worker
    on any machine makes the stored body stale everywhere at once; the next request renders it again."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    language = models.CharField(max_length=2)
    run_updated_at = models.DateTimeField()
    body = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "language"], name="one_stored_body_per_run_language")]

    def __str__(self):
        return f"stored body of {self.run_id} in {self.language}"
