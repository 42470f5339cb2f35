"""Records of the blinded human review: tasks, proposals, cohorts, assignments and reviews."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from reviewapp import protocol
from reviewapp.core.claims import ClaimedWork


class ResearchTask(models.Model):
    """One research question, often one article. The reference statement is never shown to reviewers."""

    key = models.CharField(max_length=200, unique=True, help_text="e.g. the article's PubMed id")
    question = models.TextField()
    background = models.TextField(blank=True, max_length=8000)
    reference_statement = models.TextField(blank=True)
    published = models.DateField(null=True, blank=True)
    dataset = models.CharField(max_length=200, blank=True)
    # The publications the task was made from, imported with it (never written by a model): the anchors of a
    # corpus built from the tasks' own sources (literature.waves).
    sources = models.JSONField(default=list, blank=True, help_text='PMIDs and DOIs: ["pmid:123", "doi:10.1000/x"]')
    content_sha256 = models.CharField(max_length=64)
    import_batch = models.ForeignKey("ImportBatch", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.key


class ImportBatch(models.Model):
    """One imported file. The file's sha256 makes re-importing the same file a no-op."""

    cohort = models.ForeignKey("Cohort", null=True, blank=True, on_delete=models.CASCADE, related_name="imports")
    filename = models.CharField(max_length=255)
    file_format = models.CharField(max_length=10)
    sha256 = models.CharField(max_length=64)
    task_count = models.PositiveIntegerField(default=0)
    proposal_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    staging = models.BooleanField(
        default=False, help_text="still being written in steps (SQLite): its proposals have joined no cohort yet"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cohort", "sha256"], name="one_import_per_file_per_cohort")]

    def __str__(self):
        return f"{self.filename} ({self.sha256[:12]})"


class Proposal(models.Model):
    """One hypothesis version. Provenance fields are hidden from reviewers (see reviewapp.packets)."""

    external_id = models.CharField(max_length=200, unique=True)
    task = models.ForeignKey(ResearchTask, on_delete=models.PROTECT, related_name="proposals")
    # Sections shown to reviewers; only the statement (the claim) is required.
    statement = models.TextField()
    mechanism = models.TextField(blank=True)
    prediction = models.TextField(blank=True)
    domain_category = models.CharField(max_length=200, blank=True)
    investigation_plan = models.TextField(blank=True)
    data_requirements = models.TextField(blank=True)
    alternative_explanations = models.TextField(blank=True)
    citations = models.TextField(blank=True)
    # Provenance, hidden from reviewers.
    author = models.CharField(max_length=200, blank=True, help_text="generator model or person")
    author_company = models.CharField(max_length=200, blank=True)
    method = models.CharField(max_length=200, blank=True, help_text="generation method")
    source_run = models.CharField(max_length=200, blank=True)
    # The research run the version belongs to, when the import names one; otherwise its run is the connected component
    # of the parent graph among the cohort's proposals of its task and author (docs/protocol.md#research-runs).
    research_run = models.ForeignKey(
        "ResearchRun", null=True, blank=True, on_delete=models.PROTECT, related_name="proposals"
    )
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL)
    content_sha256 = models.CharField(max_length=64)
    # Revision DAG: a revision has one parent, a crossover several.
    parents = models.ManyToManyField("self", symmetrical=False, related_name="children", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=~Q(statement=""), name="proposal_has_statement")]

    def __str__(self):
        return self.external_id


# What a research run's recorded decisions and a version's delivery records may say (docs/protocol.md#research-runs).
DECISION_KINDS = ("pursue", "branch", "merge", "prune", "restart", "stop", "allocate")
DELIVERY_STAGES = ("proposed", "selected", "compiled", "readiness_passed", "executed", "independently_reviewed")
DELIVERY_STATUSES = ("passed", "failed", "unattempted")


class ResearchRun(models.Model):
    """One agent's complete research graph on a task, as imported: its versions (Proposal.research_run), recorded
    decisions, budget and trajectories. Provenance: hidden from reviewers like a proposal's author."""

    external_id = models.CharField(max_length=200, unique=True)
    task = models.ForeignKey(ResearchTask, on_delete=models.PROTECT, related_name="research_runs")
    author = models.CharField(max_length=200, blank=True)
    # Resource-allocation judgments need a recorded budget; proposal counts never stand in for a missing one.
    budget = models.FloatField(null=True, blank=True)
    budget_unit = models.CharField(max_length=50, blank=True)
    notes = models.TextField(blank=True)
    content_sha256 = models.CharField(max_length=64)
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(budget__isnull=True) | (Q(budget__gte=0) & ~Q(budget_unit="")),
                name="research_run_budget_has_unit",
            )
        ]

    def __str__(self):
        return self.external_id


class RunDecision(models.Model):
    """A decision recorded in a research run, in its order: what the agent pursued, branched, merged, pruned,
    restarted, stopped or allocated budget to."""

    run = models.ForeignKey(ResearchRun, on_delete=models.CASCADE, related_name="decisions")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=10, choices=[(kind, kind) for kind in DECISION_KINDS])
    proposals = models.ManyToManyField(Proposal, related_name="+", blank=True)
    budget = models.FloatField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="one_decision_per_run_seq"),
            models.CheckConstraint(condition=Q(kind__in=DECISION_KINDS), name="run_decision_kind_known"),
        ]

    def __str__(self):
        return f"{self.run_id} #{self.seq} {self.kind}"


class DeliveryRecord(models.Model):
    """How far a version got towards delivery, one stage at a time. An unattempted stage is not a failure; delivery
    is never combined with a scientific score."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="delivery_records")
    stage = models.CharField(max_length=30, choices=[(stage, stage.replace("_", " ")) for stage in DELIVERY_STAGES])
    status = models.CharField(max_length=15, choices=[(status, status) for status in DELIVERY_STATUSES])
    evidence = models.TextField(blank=True)
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["proposal", "stage"], name="one_delivery_record_per_stage"),
            models.CheckConstraint(condition=Q(stage__in=DELIVERY_STAGES), name="delivery_stage_known"),
            models.CheckConstraint(condition=Q(status__in=DELIVERY_STATUSES), name="delivery_status_known"),
        ]

    def __str__(self):
        return f"{self.proposal_id} {self.stage}: {self.status}"


class Trajectory(models.Model):
    """One agent invocation in a run (its role and a summary of its instructions, actions and observations): evidence
    behind the run's versions, never an object assessed by itself."""

    external_id = models.CharField(max_length=200, unique=True)
    run = models.ForeignKey(ResearchRun, on_delete=models.CASCADE, related_name="trajectories")
    role = models.CharField(max_length=200, blank=True)
    proposals = models.ManyToManyField(Proposal, related_name="+", blank=True)
    summary = models.TextField(blank=True)
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL)

    def __str__(self):
        return self.external_id


class Cohort(models.Model):
    """A named, frozen set of proposals put to review. Proposals can be added only while it is a draft."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    reviewers_per_proposal = models.PositiveSmallIntegerField(default=3)
    seed = models.BigIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    is_demo = models.BooleanField(default=False, help_text="written for demonstration, not research data")
    proposals = models.ManyToManyField(Proposal, related_name="cohorts", blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(reviewers_per_proposal__gte=1), name="cohort_needs_a_reviewer"),
        ]
        # The three roles are groups holding these permissions (see reviewapp.core.roles).
        permissions = [
            ("review", "Can review assigned proposals"),
            ("coordinate", "Can import, assign, export and unblind"),
            ("analyse", "Can read every cohort, review and analysis"),
        ]

    def __str__(self):
        return self.name


class Conflict(models.Model):
    """A reviewer's declared conflict of interest, with a proposal or with every proposal of an author."""

    class Kind(models.TextChoices):
        COLLABORATOR = "collaborator", "Collaborator"
        ADVISOR = "advisor", "Advisor or advisee"
        INSTITUTIONAL = "institutional", "Institutional"
        PERSONAL = "personal", "Personal"
        OTHER = "other", "Other"

    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conflicts")
    proposal = models.ForeignKey(Proposal, null=True, blank=True, on_delete=models.CASCADE)
    author = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.OTHER)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(proposal__isnull=False) | ~Q(author=""), name="conflict_names_proposal_or_author"
            ),
        ]

    def __str__(self):
        return f"{self.reviewer} ~ {self.proposal or self.author} ({self.kind})"


class Assignment(models.Model):
    """A reviewer × proposal within a cohort; position is the reviewer's seeded random order."""

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="assignments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments")
    proposal = models.ForeignKey(Proposal, on_delete=models.PROTECT, related_name="assignments")
    position = models.PositiveIntegerField()
    deferred_reason = models.TextField(blank=True, help_text="the reviewer's reason for skipping, for the coordinator")
    deferred_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cohort", "reviewer", "proposal"], name="one_assignment_per_reviewer_proposal"
            ),
        ]
        indexes = [models.Index(fields=["reviewer", "cohort", "position"])]

    def __str__(self):
        return f"{self.reviewer} → {self.proposal} in {self.cohort}"


class Review(models.Model):
    """The reviewer's answers to the protocol's form, one per assignment, draft until submitted."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="review")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    overall = models.PositiveSmallIntegerField(null=True, blank=True)
    recommendation = models.CharField(max_length=10, blank=True)
    importance = models.CharField(max_length=10, blank=True)
    advance_over_known_work = models.CharField(max_length=10, blank=True)
    plausible_evidence_bounded = models.CharField(max_length=10, blank=True)
    data_fit = models.CharField(max_length=10, blank=True)
    alternative_explanations = models.CharField(max_length=10, blank=True)
    informative_results = models.CharField(max_length=10, blank=True)
    flaw_verdict = models.CharField(max_length=10, blank=True)
    flaw_checklist = models.JSONField(default=list, blank=True)
    main_flaw = models.TextField(blank=True)
    comments = models.TextField(blank=True)
    # Optimistic concurrency: every save must name the version it started from.
    version = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    last_saved_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    seconds_spent = models.PositiveIntegerField(default=0)
    # The browser tab that made the last save and when its answers were last edited there (ms since the epoch): a
    # tab's own save that arrives late (sent as its page reloaded) is told from another tab's change.
    saved_by_tab = models.CharField(max_length=64, blank=True)
    saved_edit_ms = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(overall__isnull=True) | Q(overall__gte=1, overall__lte=5), name="overall_in_range"
            ),
            models.CheckConstraint(
                condition=Q(recommendation__in=["", *[key for key, *_ in protocol.RECOMMENDATIONS]]),
                name="recommendation_known",
            ),
            models.CheckConstraint(
                condition=Q(flaw_verdict__in=["", *[key for key, *_ in protocol.FLAW_VERDICTS]]),
                name="flaw_verdict_known",
            ),
            *[
                models.CheckConstraint(
                    condition=Q(**{f"{field}__in": ["", *protocol.CRITERION_VALUES]}), name=f"{field}_in_scale"
                )
                for field in protocol.CRITERION_FIELDS
            ],
            # A submitted review is complete: no criterion may be missing ("can't judge" is an answer).
            models.CheckConstraint(
                condition=Q(status="draft")
                | (
                    Q(overall__isnull=False)
                    & ~Q(recommendation="")
                    & ~Q(flaw_verdict="")
                    & Q(submitted_at__isnull=False)
                    & Q(*[~Q(**{field: ""}) for field in protocol.CRITERION_FIELDS])
                ),
                name="submitted_review_is_complete",
            ),
        ]

    def __str__(self):
        return f"review of {self.assignment_id} ({self.status})"


class BackgroundJob(ClaimedWork):
    """A unit of Celery work whose state a page can show, so no job waits silently (claimed through
    reviewapp.core.claims)."""

    class State(models.TextChoices):
        QUEUED = "queued", "Waiting for a worker"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Finished"
        FAILED = "failed", "Failed"

    PENDING, RUNNING, DONE, FAILED = State.QUEUED, State.RUNNING, State.SUCCEEDED, State.FAILED

    kind = models.CharField(max_length=50)
    params = models.JSONField(default=dict)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    progress = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result_path = models.CharField(max_length=500, blank=True)
    result_name = models.CharField(max_length=255, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="when the running job last reported progress")
    result_deleted_at = models.DateTimeField(null=True, blank=True, help_text="when the kept file was deleted")

    def __str__(self):
        return f"{self.kind} #{self.pk} ({self.state})"


class AuditEvent(models.Model):
    """Who did what to which record, for actions that change review outcomes (e.g. reopening)."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=50)
    target_type = models.CharField(max_length=50)
    target_id = models.CharField(max_length=50)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self):
        return f"{self.action} {self.target_type}:{self.target_id}"


class ApiToken(models.Model):
    """A key for the API (`Authorization: Token <key>`). Only the key's sha256 is stored; the key is shown once.

    A token ends at expires_at, when it is revoked (the row is deleted), and when its user's password changes: it
    holds the fingerprint of the password it was made under (Django's session hash), as a session does."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, help_text="what the token is for, as its owner named it")
    prefix = models.CharField(max_length=12, help_text="the key's first characters, to tell tokens apart")
    key_sha256 = models.CharField(max_length=64, unique=True)
    password_fingerprint = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"API token {self.prefix}… of {self.user_id}"


class PendingPasswordChange(models.Model):
    """An account whose password was given to it (made by a coordinator): its owner must choose their own before
    anything else."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"password change due for {self.user_id}"
