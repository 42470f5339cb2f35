"""Records of the inspiration audit (docs/protocol.md#inspiration-audit): cutoffs per group, audits, the versions they
audit, the shared judgements and the batches workers claim. Hidden from reviewers like every automated result."""

from django.conf import settings
from django.db import models

from reviewapp.core.claims import ClaimedWork, ClaimState
from reviewapp.inspiration.cutoffs import Cutoff


class InspirationCutoff(models.Model):
    """The operational cutoff of one group (a generator): later literature is what was published strictly after it."""

    class Precision(models.TextChoices):
        DAY = "day", "Day"
        MONTH = "month", "Month"

    group = models.CharField(max_length=200, unique=True)
    day = models.DateField(help_text="the day, or the first day of the month")
    precision = models.CharField(max_length=5, choices=Precision.choices)
    note = models.CharField(max_length=500, blank=True, help_text="e.g. where the date comes from")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["group"]

    def __str__(self):
        return f"{self.group}: {self.cutoff.text}"

    @property
    def cutoff(self) -> Cutoff:
        return Cutoff(self.day, self.precision)


class InspirationAudit(ClaimedWork):
    """One audit of a population's hypothesis versions against the literature published after each group's cutoff.

    It stores what makes it reproducible: the cutoffs, the corpus it searched (size and fingerprint), the judge and
    its prompt, and every judgement (InspirationJudgment). A running audit advances by phases (`phase`); the work of
    each phase is done in batches that workers claim."""

    class Population(models.TextChoices):
        COHORT = "cohort", "A cohort's proposals"
        RUNS = "runs", "The hypotheses of screening runs"
        BENCHMARK = "benchmark", "A benchmark set's hypotheses"

    class Phase(models.TextChoices):
        RETRIEVAL = "retrieval", "Retrieving later literature"
        JUDGING = "judging", "Judging"
        SUMMARY = "summary", "Counting"

    State = ClaimState

    population = models.CharField(max_length=10, choices=Population.choices)
    cohort = models.ForeignKey("reviewapp.Cohort", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    runs = models.ManyToManyField("screening.Run", blank=True, related_name="+")
    benchmark = models.ForeignKey(
        "benchmarks.BenchmarkSet", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    window_start = models.DateField(
        null=True, blank=True, help_text="later literature published on or after this day (the window's first day)"
    )
    window_end = models.DateField(null=True, blank=True, help_text="later literature published on or before this day")
    title_diagnostic = models.BooleanField(default=False, help_text="also retrieve with each proposal's title")
    replay_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="judgements reused from"
    )
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.RETRIEVAL)
    # {group: {"cutoff", "precision", "last_day", "date_too_coarse"}} as they were when the audit started.
    cutoffs = models.JSONField(default=dict)
    # {"references", "dated", "fingerprint", "window_start", "window_end", "in_window", "date_too_coarse"}: the corpus
    # when retrieval started.
    corpus = models.JSONField(default=dict)
    judge_endpoint = models.ForeignKey(
        "screening.ModelEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The judge as it was: display name, company, model id, simulated, temperature.
    judge = models.JSONField(default=dict)
    prompt = models.JSONField(default=dict, help_text="the judge's prompt: version, texts and their sha256")
    simulated = models.BooleanField(default=False, help_text="a simulated model judged (part of) it")
    progress = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    # The counts of a finished audit (selectors.audit_report), so its page need not count again.
    summary = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return f"inspiration audit {self.pk} ({self.state})"


class InspirationJudgment(ClaimedWork):
    """One judgement of one (hypothesis text, reference) input, shared by every version with that exact input."""

    class Judgment(models.TextChoices):
        POSITIVE = "positive", "Positive"
        NEGATIVE = "negative", "Negative"
        FAILED = "failed", "Failed"

    State = ClaimState

    audit = models.ForeignKey(InspirationAudit, on_delete=models.CASCADE, related_name="judgments")
    input_sha256 = models.CharField(max_length=64, help_text="the prompt version, the text judged and the reference")
    reference = models.ForeignKey("literature.Reference", null=True, on_delete=models.SET_NULL, related_name="+")
    hypothesis_text = models.TextField(help_text="the first 2500 characters of the version, as judged")
    judgment = models.CharField(max_length=10, choices=Judgment.choices, blank=True)
    # What the judge answered before the quote was checked (a positive without a verified quote becomes negative).
    judged = models.CharField(max_length=10, blank=True)
    quote_verified = models.BooleanField(default=False)
    connection = models.CharField(max_length=20, blank=True)
    quote = models.TextField(blank=True)
    reason = models.TextField(blank=True)
    replayed_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    model_call = models.ForeignKey(
        "screening.ModelCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["audit", "input_sha256"], name="one_inspiration_judgment_per_input")
        ]

    def __str__(self):
        return f"judgement {self.pk}: {self.judgment or self.state}"


class InspirationItem(models.Model):
    """One hypothesis version of an audit: what retrieval found for it and the judgement it shares."""

    audit = models.ForeignKey(InspirationAudit, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    # How the population names it: a proposal's imported id, "<run id>/H3", or "<task key>/<hypothesis key>".
    label = models.CharField(max_length=300)
    proposal = models.ForeignKey(
        "reviewapp.Proposal", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run_hypothesis = models.ForeignKey(
        "screening.Hypothesis", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    benchmark_hypothesis = models.ForeignKey(
        "benchmarks.BenchmarkHypothesis", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    group = models.CharField(max_length=200)
    domain = models.CharField(max_length=200, blank=True)
    text = models.TextField(help_text="the version's text (retrieval reads its first 6000 characters)")
    title = models.TextField(blank=True, help_text="its title, or its first sentence (the diagnostic's query)")
    retrieval_done = models.BooleanField(default=False)
    retrieved = models.BooleanField(default=False, help_text="the best candidate passed the lexical gate")
    # The best candidate, whether or not it passed, with the terms it shares and its rank score.
    candidate = models.ForeignKey("literature.Reference", null=True, on_delete=models.SET_NULL, related_name="+")
    shared_terms = models.JSONField(default=list, blank=True)
    score = models.FloatField(null=True, blank=True)
    title_retrieved = models.BooleanField(null=True, help_text="the diagnostic: retrieved with the title as query")
    judgment = models.ForeignKey(
        InspirationJudgment, null=True, blank=True, on_delete=models.SET_NULL, related_name="items"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "position"], name="one_inspiration_item_per_position")]
        ordering = ["audit", "position"]

    def __str__(self):
        return f"{self.label} in audit {self.audit_id}"


class InspirationBatch(ClaimedWork):
    """A share of an audit's work that one worker claims: the retrieval for a range of items, or a list of
    judgements to ask for."""

    class Kind(models.TextChoices):
        RETRIEVAL = "retrieval", "Retrieval"
        JUDGING = "judging", "Judging"

    State = ClaimState

    audit = models.ForeignKey(InspirationAudit, on_delete=models.CASCADE, related_name="batches")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    first = models.PositiveIntegerField(default=0, help_text="retrieval: the first item position")
    last = models.PositiveIntegerField(default=0, help_text="retrieval: the last item position")
    judgments = models.JSONField(default=list, blank=True, help_text="judging: the judgements' ids")

    def __str__(self):
        return f"{self.kind} batch {self.pk} of audit {self.audit_id} ({self.state})"
