"""Records of the AI review panel: its prompts, what it reviewed, each role's review, revision judgments, the pairwise
critique log of a cohort and the ratings that log gives (docs/protocol.md#ai-review-panel). None of it ever reaches a
reviewer."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from reviewapp.panel.profile import ELIGIBLE_VALUES, REVISION_CATEGORIES, ROLES
from reviewapp.panel.ratings import OUTCOMES


class PanelPrompt(models.Model):
    """One version of one role's prompt, exactly as sent: the system message and the user message's template. Every
    review, judgment and comparison names the prompt it was asked with."""

    class Kind(models.TextChoices):
        RUBRIC_JUDGE = "rubric_judge", "rubric judge"
        DOMAIN_SCIENTIST = "domain_scientist", "domain scientist"
        METHODS_REVIEWER = "methods_reviewer", "methods reviewer"
        CRITIC = "critic", "pairwise critique"
        REVISION_JUDGE = "revision_judge", "revision judge"
        REFERENCE_REVIEWER = "reference_reviewer", "fresh-context reference reviewer"
        PATH_JUDGE = "path_judge", "development path judge"
        RUN_JUDGE = "run_judge", "research run judge"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    version = models.CharField(max_length=40)
    system = models.TextField()
    template = models.TextField(help_text="the user message, with the packet in place of its {placeholders}")
    sha256 = models.CharField(max_length=64, unique=True, help_text="of the kind, version, system and template")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "-created_at"]

    def __str__(self):
        return f"{self.kind} {self.version}"


# The roster roles every level of a cohort's panel asks; the fresh-context reference reviewer is optional.
PANEL_ROLES = tuple(kind for kind in PanelPrompt.Kind.values if kind != PanelPrompt.Kind.REFERENCE_REVIEWER)


class PanelSubject(models.Model):
    """What the panel reviews: a cohort's proposal, a screening run's hypothesis or a benchmark set's hypothesis."""

    proposal = models.OneToOneField(
        "reviewapp.Proposal", null=True, blank=True, on_delete=models.CASCADE, related_name="panel_subject"
    )
    screening_hypothesis = models.OneToOneField(
        "screening.Hypothesis", null=True, blank=True, on_delete=models.CASCADE, related_name="panel_subject"
    )
    benchmark_hypothesis = models.OneToOneField(
        "benchmarks.BenchmarkHypothesis", null=True, blank=True, on_delete=models.CASCADE, related_name="panel_subject"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(proposal__isnull=False, screening_hypothesis__isnull=True, benchmark_hypothesis__isnull=True)
                    | Q(proposal__isnull=True, screening_hypothesis__isnull=False, benchmark_hypothesis__isnull=True)
                    | Q(proposal__isnull=True, screening_hypothesis__isnull=True, benchmark_hypothesis__isnull=False)
                ),
                name="panel_subject_is_one_thing",
            )
        ]

    def __str__(self):
        return f"panel subject {self.pk}"


class ReviewStatus(models.TextChoices):
    """Where an assessment stands with people: as the model gave it, checked by a coordinator, or disputed by one (a
    change is audit-logged)."""

    AUTOMATED = "automated", "Automated"
    CHECKED = "checked", "Checked"
    DISPUTED = "disputed", "Disputed"


class _ModelAnswer(models.Model):
    """Who answered with which prompt, and the recorded call (its request and reply); the sha256 of the packet sent
    (the source snapshot) and the assessment's review status."""

    prompt = models.ForeignKey(PanelPrompt, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    endpoint = models.ForeignKey(
        "screening.ModelEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    model_name = models.CharField(max_length=200, blank=True, help_text="the endpoint's name at the time")
    simulated = models.BooleanField(default=False, help_text="the project's simulated server answered, not a model")
    model_call = models.ForeignKey(
        "screening.ModelCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    packet_sha256 = models.CharField(max_length=64, blank=True, help_text="sha256 of the packet the model was sent")
    review_status = models.CharField(max_length=10, choices=ReviewStatus.choices, default=ReviewStatus.AUTOMATED)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class _ScoredReview(_ModelAnswer):
    """A review of one subject on the eight dimensions: per dimension an integer 1–10, "unknown" or "inapplicable",
    eligibility and a rationale. A reviewer whose replies stayed unusable is recorded as failed, with no scores at
    all."""

    class State(models.TextChoices):
        DONE = "done", "Reviewed"
        FAILED = "failed", "Failed"

    state = models.CharField(max_length=10, choices=State.choices)
    eligible = models.CharField(max_length=10, blank=True, help_text="true, false or unknown; empty when failed")
    scores = models.JSONField(default=dict, blank=True, help_text='dimension → 1–10, "unknown" or "inapplicable"')
    rationale = models.TextField(blank=True)
    error = models.TextField(blank=True)

    class Meta:
        abstract = True


# Eligibility is known exactly when the review was done.
_ELIGIBILITY_WHEN_DONE = Q(state="failed", eligible="") | Q(state="done", eligible__in=ELIGIBLE_VALUES)


class PanelReview(_ScoredReview):
    """One role's review of one subject."""

    subject = models.ForeignKey(PanelSubject, on_delete=models.CASCADE, related_name="reviews")
    role = models.CharField(max_length=20, choices=[(role, role.replace("_", " ")) for role in ROLES])

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["subject", "role"], name="one_panel_review_per_role"),
            models.CheckConstraint(condition=_ELIGIBILITY_WHEN_DONE, name="panel_review_eligibility_known_when_done"),
        ]

    def __str__(self):
        return f"{self.role} review of {self.subject_id} ({self.state})"


class ReferenceReview(_ScoredReview):
    """A fresh-context reference's review of one subject: the same packet and scale as the roles', asked in a new
    conversation without a role's framing (docs/protocol.md#fresh-context-references). A development diagnostic of
    the roles, kept apart from them: it never enters medians, Q or the human calibration."""

    subject = models.OneToOneField(PanelSubject, on_delete=models.CASCADE, related_name="reference_review")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=_ELIGIBILITY_WHEN_DONE, name="reference_review_eligibility_known_when_done"
            ),
        ]

    def __str__(self):
        return f"reference review of {self.subject_id} ({self.state})"


class RevisionJudgment(_ModelAnswer):
    """What a revision did against one of its parents, in one of four categories: one judgment per parent→child edge
    (a transition, docs/protocol.md#transitions); the revision analysis reads the first listed parent's."""

    class State(models.TextChoices):
        DONE = "done", "Judged"
        FAILED = "failed", "Failed"

    subject = models.ForeignKey(PanelSubject, on_delete=models.CASCADE, related_name="revision_judgments")
    predecessor = models.ForeignKey("reviewapp.Proposal", on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices)
    category = models.CharField(max_length=30, blank=True, choices=[(c, c) for c in REVISION_CATEGORIES])
    rationale = models.TextField(blank=True)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["subject", "predecessor"], name="one_revision_judgment_per_edge"),
            models.CheckConstraint(
                condition=Q(state="failed", category="") | Q(state="done", category__in=REVISION_CATEGORIES),
                name="revision_judgment_category_when_done",
            ),
        ]

    def __str__(self):
        return f"revision of {self.subject_id}: {self.category or self.state}"


class Comparison(_ModelAnswer):
    """One pairwise critique outcome in a cohort's log, in terms of the proposals (never of positions). `seq` is the
    order in which ratings were updated; `shown_first` and `order_seed` record the randomised order a model saw."""

    class Source(models.TextChoices):
        MODEL = "model", "critique model"
        IMPORT = "import", "imported"

    cohort = models.ForeignKey("reviewapp.Cohort", on_delete=models.CASCADE, related_name="comparisons")
    seq = models.PositiveIntegerField()
    a = models.ForeignKey("reviewapp.Proposal", on_delete=models.CASCADE, related_name="+")
    b = models.ForeignKey("reviewapp.Proposal", on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=15, choices=[(outcome, outcome) for outcome in OUTCOMES])
    source = models.CharField(max_length=10, choices=Source.choices)
    shown_first = models.ForeignKey(
        "reviewapp.Proposal", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    order_seed = models.BigIntegerField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["cohort", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["cohort", "seq"], name="one_comparison_per_seq"),
            models.CheckConstraint(condition=~Q(a=models.F("b")), name="comparison_of_two_proposals"),
            models.CheckConstraint(condition=Q(outcome__in=OUTCOMES), name="comparison_outcome_known"),
        ]

    def __str__(self):
        return f"#{self.seq} {self.a_id} vs {self.b_id}: {self.outcome}"


class RatingLog(models.Model):
    """A cohort's place in its comparison log: the last sequence number applied. Appending locks this row, so the
    log's order is the order of the updates."""

    cohort = models.OneToOneField("reviewapp.Cohort", on_delete=models.CASCADE, related_name="rating_log")
    last_seq = models.PositiveIntegerField(default=0)
    recomputed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"ratings of cohort {self.cohort_id} up to #{self.last_seq}"


class Rating(models.Model):
    """A proposal's TrueSkill posterior in a cohort after the log's comparisons so far (recomputable from it)."""

    cohort = models.ForeignKey("reviewapp.Cohort", on_delete=models.CASCADE, related_name="ratings")
    proposal = models.ForeignKey("reviewapp.Proposal", on_delete=models.CASCADE, related_name="+")
    mu = models.FloatField()
    sigma = models.FloatField()
    comparisons = models.PositiveIntegerField(default=0, help_text="a, b or tie; insufficient is an abstention")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cohort", "proposal"], name="one_rating_per_cohort_proposal")]

    def __str__(self):
        return f"{self.proposal_id} in {self.cohort_id}: {self.mu:.2f} ± {self.sigma:.2f}"


class Assessment(_ModelAnswer):
    """A judge's assessment of a development path or a research run of a cohort on its rubric's dimensions
    (docs/protocol.md#development-paths, #research-runs): per dimension a score 0–4, "unknown" or "inapplicable", with
    the quoted evidence and a rationale. A judge whose replies stayed unusable is recorded as failed, with no scores.
    The object is named by `object_key` (a path by its terminal version, a run by its id) and `proposals` keeps the
    versions it covered when it was assessed."""

    class Level(models.TextChoices):
        PATH = "path", "Development path"
        RUN = "run", "Research run"

    class State(models.TextChoices):
        DONE = "done", "Assessed"
        FAILED = "failed", "Failed"

    cohort = models.ForeignKey("reviewapp.Cohort", on_delete=models.CASCADE, related_name="assessments")
    level = models.CharField(max_length=10, choices=Level.choices)
    object_key = models.CharField(max_length=200)
    proposals = models.JSONField(default=list, help_text="the versions' ids the object held when assessed")
    rubric = models.CharField(max_length=40, help_text="the rubric's version, e.g. dfm-paths-v1")
    state = models.CharField(max_length=10, choices=State.choices)
    scores = models.JSONField(default=dict, blank=True, help_text='dimension → 0–4, "unknown" or "inapplicable"')
    evidence = models.JSONField(default=dict, blank=True, help_text="dimension → the quoted evidence")
    rationales = models.JSONField(default=dict, blank=True, help_text="dimension → the judge's rationale")
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cohort", "level", "object_key"], name="one_assessment_per_object"),
        ]

    def __str__(self):
        return f"{self.level} {self.object_key} of {self.cohort_id} ({self.state})"


# What a contribution family records (docs/protocol.md#contribution-families): its status, and its evidence maturity
# in order, from a proposal to an independently checked result.
FAMILY_STATUSES = ("unresolved", "supported", "contradicted", "inconclusive")
FAMILY_MATURITIES = (
    "proposed",
    "source_grounded",
    "diagnostically_examined",
    "study_completed",
    "independently_checked",
)


class ContributionFamily(models.Model):
    """Related candidates of a cohort grouped as one contribution, with what coordinators recorded of it
    (docs/protocol.md#contribution-families). Membership never implies confirmation, and maturity never passes from
    one member to another by itself."""

    cohort = models.ForeignKey("reviewapp.Cohort", on_delete=models.CASCADE, related_name="contribution_families")
    question = models.TextField(blank=True, help_text="the scientific question the family addresses")
    increment = models.TextField(blank=True, help_text="what it adds beyond the starting evidence")
    status = models.CharField(max_length=15, choices=[(s, s) for s in FAMILY_STATUSES], default="unresolved")
    maturity = models.CharField(
        max_length=30, choices=[(m, m.replace("_", " ")) for m in FAMILY_MATURITIES], default="proposed"
    )
    evidence = models.TextField(blank=True)
    review_status = models.CharField(max_length=10, choices=ReviewStatus.choices, default=ReviewStatus.AUTOMATED)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cohort", "pk"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=FAMILY_STATUSES), name="family_status_known"),
            models.CheckConstraint(condition=Q(maturity__in=FAMILY_MATURITIES), name="family_maturity_known"),
        ]

    def __str__(self):
        return f"family {self.pk} of {self.cohort_id}"


class FamilyMember(models.Model):
    """A proposal's family in a cohort: one family per proposal and cohort."""

    cohort = models.ForeignKey("reviewapp.Cohort", on_delete=models.CASCADE, related_name="+")
    family = models.ForeignKey(ContributionFamily, on_delete=models.CASCADE, related_name="members")
    proposal = models.ForeignKey("reviewapp.Proposal", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cohort", "proposal"], name="one_family_per_cohort_proposal")]

    def __str__(self):
        return f"{self.proposal_id} in family {self.family_id}"


# The model-answered records whose review status coordinators set, by the name the API uses.
REVIEWED_RECORDS = {
    "assessment": Assessment,
    "panel_review": PanelReview,
    "reference_review": ReferenceReview,
    "revision_judgment": RevisionJudgment,
}
