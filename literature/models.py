"""The reference corpus: published articles the novelty check compares hypotheses with."""

from django.db import models

from reviewapp.core.claims import ClaimedWork, ClaimState
from screening.models import Hypothesis


class Reference(models.Model):
    """One article from one source; re-importing the same source id updates it, never duplicates it."""

    class Source(models.TextChoices):
        PUBMED = "pubmed", "PubMed"
        EUROPE_PMC = "europepmc", "Europe PMC"
        RIS = "ris", "RIS file"
        CSV = "csv", "CSV file"
        WOS = "wos", "Web of Science file"
        BIBTEX = "bibtex", "BibTeX file"
        DEMO = "demo", "Demo data"

    class DatePrecision(models.TextChoices):
        UNKNOWN = "", "Unknown"
        YEAR = "year", "Year"
        MONTH = "month", "Month"
        DAY = "day", "Day"

    source = models.CharField(max_length=20, choices=Source.choices)
    source_id = models.CharField(max_length=200, help_text="the id within its source: PMID, DOI or the file's own id")
    # Not indexed: nothing looks references up by PMID or DOI (a reference is found by its source id), and every
    # import would write the two indexes (four, with their LIKE variants) for each record.
    pmid = models.CharField(max_length=20, blank=True)
    doi = models.CharField(max_length=200, blank=True)
    title = models.TextField()
    abstract = models.TextField(blank=True)
    journal = models.CharField(max_length=500, blank=True)
    authors = models.JSONField(default=list, blank=True)
    # The first day of the period when the source gives only a year or a month (see published_precision).
    published = models.DateField(null=True, blank=True, db_index=True)
    published_precision = models.CharField(max_length=5, choices=DatePrecision.choices, blank=True)
    raw = models.TextField(blank=True, help_text="the record as the source gave it")
    raw_digest = models.BinaryField(
        max_length=16, default=b"", help_text="XXH3 (128 bits) of raw's UTF-8 bytes: tells a re-import"
    )
    raw_warned = models.BooleanField(
        null=True, help_text="whether reading raw gave warnings (a field left out); empty when not told"
    )
    content_sha256 = models.CharField(max_length=64)
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "source_id"], name="one_reference_per_source_id")]
        # A re-import of MEDLINE, RIS or Web of Science finds the records it holds byte for byte by their raw digest.
        indexes = [models.Index(fields=["source", "raw_digest"], name="reference_by_raw_digest")]

    def __str__(self):
        return f"{self.source}:{self.source_id} {self.title[:60]}"


class ReferenceImport(models.Model):
    """One file imported, or one online search fetched, into the corpus (written when it succeeded; on SQLite a
    large file's import is written as it begins, in the phase `staging`, see literature.services)."""

    class Origin(models.TextChoices):
        FILE = "file", "File"
        EUROPE_PMC = "europepmc", "Europe PMC search"
        PUBMED = "pubmed", "PubMed search"

    class Phase(models.TextChoices):
        STAGING = "staging", "Reading the file into the stage"
        APPLYING = "applying", "Writing the stage into the corpus"
        DONE = "done", "Done"

    origin = models.CharField(max_length=20, choices=Origin.choices)
    file_format = models.CharField(max_length=20, blank=True, help_text="pubmed_xml, medline, ris, wos, bibtex or csv")
    name = models.CharField(max_length=500, help_text="the file's name, or the search query")
    records = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0, help_text="records not written: unusable ones and repeats")
    # The first of the unusable records and of the warnings, as the import answered them.
    skipped_records = models.JSONField(default=list, blank=True, help_text='[{"record", "id", "reason"}]')
    warnings = models.JSONField(default=list, blank=True, help_text='[{"record", "id", "field", "message"}]')
    seconds = models.FloatField(default=0)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.DONE)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="when a staged import last wrote a step (its process is alive)"
    )
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.get_origin_display()} {self.name[:60]}"


class StagedReference(models.Model):
    """A reference a staged file import (SQLite, see literature.services) has read and not yet written into the corpus.
    Nothing that reads the corpus reads this table: the import's references become visible only when its stage is
    applied, and then this row is deleted. The columns are those of Reference that an import writes."""

    reference_import = models.ForeignKey(ReferenceImport, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=20)
    source_id = models.CharField(max_length=200)
    pmid = models.CharField(max_length=20, blank=True)
    doi = models.CharField(max_length=200, blank=True)
    title = models.TextField()
    abstract = models.TextField(blank=True)
    journal = models.CharField(max_length=500, blank=True)
    authors = models.JSONField(default=list, blank=True)
    published = models.DateField(null=True, blank=True)
    published_precision = models.CharField(max_length=5, blank=True)
    raw = models.TextField(blank=True)
    raw_digest = models.BinaryField(max_length=16, default=b"")
    raw_warned = models.BooleanField(null=True)
    content_sha256 = models.CharField(max_length=64)
    is_demo = models.BooleanField(default=False)

    def __str__(self):
        return f"staged {self.source}:{self.source_id}"


class SourceResponse(models.Model):
    """A cached answer of an online literature source. The key covers the source, the endpoint and the request's
    parameters without credentials; searches expire, by-id fetches do not (expires_at empty)."""

    source = models.CharField(max_length=20)
    endpoint = models.CharField(max_length=50)
    key = models.CharField(max_length=64, unique=True, help_text="sha256 of source, endpoint and parameters")
    parameters = models.JSONField(default=dict, help_text="the request's parameters, credentials left out")
    status_code = models.PositiveSmallIntegerField()
    content_type = models.CharField(max_length=200, blank=True)
    body = models.TextField()
    fetched_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.source} {self.endpoint} {self.key[:12]}"


class SourceRateLimit(models.Model):
    """When the next request to one online source may start. Every worker on every machine books its turn here
    (one row per limit, locked while booking), so a source's published rate holds across all of them."""

    name = models.CharField(max_length=50, unique=True)
    # Seconds since the epoch on the database server's clock, the one clock every worker shares.
    next_request_at = models.FloatField(default=0)

    def __str__(self):
        return f"{self.name} next at {self.next_request_at:.3f}"


class NoveltyCheck(ClaimedWork):
    """One literature novelty check of one hypothesis (docs/protocol.md#literature-novelty-check): what retrieval found,
    what the judge answered and the verdict. A check of a run's hypothesis is recorded with its result; an on-demand
    check of a proposal is recorded when asked for and done by a worker (claimed through reviewapp.core.claims)."""

    # The verdicts a run's hypothesis records (screening owns them; a check's verdict is the same).
    Verdict = Hypothesis.Verdict
    State = ClaimState

    hypothesis_text = models.TextField()
    endpoint = models.ForeignKey(
        "screening.ModelEndpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey("screening.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    hypothesis = models.ForeignKey(
        "screening.Hypothesis", null=True, blank=True, on_delete=models.CASCADE, related_name="novelty_checks"
    )
    proposal = models.ForeignKey(
        "reviewapp.Proposal", null=True, blank=True, on_delete=models.CASCADE, related_name="novelty_checks"
    )
    published_before = models.DateField(null=True, blank=True, help_text="only references published before this date")
    verdict = models.CharField(max_length=20, choices=Verdict.choices, blank=True)
    evidence = models.TextField(blank=True, help_text="the quoted passage(s)")
    reference = models.ForeignKey(Reference, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The reference as cited: source, id, title, year, link.
    citation = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    unsupported = models.BooleanField(default=False, help_text="the judge's verdict had no verbatim quote behind it")
    # The judge's verdict before a downgrade to unresolved (empty when no judge was asked).
    judged_verdict = models.CharField(max_length=20, blank=True)
    # For components_reported: [{"part", "text", "evidence", "citation"}], one per part of the hypothesis.
    components = models.JSONField(default=list, blank=True)
    # What retrieval found: [{"label", "reference_id", "title", "score", "shared_terms", "retrieved_for"}].
    candidates = models.JSONField(default=list, blank=True)
    model_call = models.ForeignKey(
        "screening.ModelCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return f"novelty check {self.pk}: {self.verdict or self.state}"


class CitationWave(ClaimedWork):
    """One wave of citation traversal from anchor works through Europe PMC (docs/protocol.md#a-corpus-by-citation-wave):
    each anchor's references (backward) and citations (forward), every page; then the works at either end of an edge,
    anchors included, fetched and written into the corpus. Done by a worker, claimed through reviewapp.core.claims;
    edges and references are written as they arrive, so a wave that stops keeps what it obtained."""

    class Phase(models.TextChoices):
        TRAVERSING = "traversing", "Following citations"
        RESOLVING = "resolving", "Fetching the works"
        FINISHED = "finished", "Finished"

    State = ClaimState

    class Origin(models.TextChoices):
        ANCHORS = "anchors", "Typed in"
        COHORT = "cohort", "Cohort"
        BENCHMARK = "benchmark", "Benchmark set"

    anchors = models.JSONField(help_text='Europe PMC ids with their source: ["MED:12345", "PMC:PMC67890"]')
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.ANCHORS)
    origin_id = models.PositiveIntegerField(null=True, blank=True, help_text="the cohort's or benchmark set's id")
    origin_name = models.CharField(max_length=200, blank=True, help_text="its name when the wave started")
    task_sources = models.JSONField(
        default=list, blank=True, help_text='the tasks read, with their sources: [{"task", "sources"}]'
    )
    source_dois = models.JSONField(
        default=list, blank=True, help_text="DOIs of the tasks' sources, found in Europe PMC by the worker"
    )
    unresolved_sources = models.JSONField(default=list, blank=True, help_text="sources Europe PMC did not know")
    corpus_sha256 = models.CharField(
        max_length=64, blank=True, help_text="sha256 of the anchors, edges and resolved works' content, once finished"
    )
    phase = models.CharField(max_length=12, choices=Phase.choices, default=Phase.TRAVERSING)
    # Progress of the current phase (traversals, then works fetched), for the page's progress bar.
    progress = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    traversals = models.PositiveIntegerField(
        default=0, help_text="reference and citation lists read, one per anchor each"
    )
    edges = models.PositiveIntegerField(default=0, help_text="distinct citing → cited pairs between identified works")
    unmatched = models.PositiveIntegerField(default=0, help_text="list entries Europe PMC could not identify")
    works = models.PositiveIntegerField(
        default=0, help_text="distinct identified works: anchors and both ends of edges"
    )
    resolved = models.PositiveIntegerField(default=0, help_text="works fetched with a usable record into the corpus")
    unresolved = models.PositiveIntegerField(default=0, help_text="works Europe PMC returned no usable record for")
    requests = models.PositiveIntegerField(default=0, help_text="pages asked for (cached answers included)")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="when its worker last wrote progress")
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return f"citation wave {self.pk} ({self.state}, {len(self.anchors)} anchors)"


class CitationEdge(models.Model):
    """One citation found by a wave: `citing` cites `cited` (both "SRC:id" as Europe PMC names them)."""

    class Direction(models.TextChoices):
        BACKWARD = "backward", "In an anchor's references"
        FORWARD = "forward", "Citing an anchor"

    wave = models.ForeignKey(CitationWave, on_delete=models.CASCADE, related_name="citation_edges")
    citing = models.CharField(max_length=100)
    cited = models.CharField(max_length=100)
    direction = models.CharField(max_length=10, choices=Direction.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["wave", "citing", "cited"], name="one_edge_per_wave_pair")]

    def __str__(self):
        return f"{self.citing} → {self.cited}"
