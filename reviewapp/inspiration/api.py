"""API of the inspiration audit (docs/protocol.md#inspiration-audit).

GET /api/v1/inspiration/cutoffs; PUT/DELETE /api/v1/inspiration/cutoffs/{group}
GET/POST /api/v1/inspiration/audits; GET /api/v1/inspiration/audits/{id}; GET /api/v1/inspiration/audits/{id}/items
"""

from django.urls import reverse
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.core.errors import validated, validated_query
from reviewapp.core.fields import IdField
from reviewapp.core.paging import PageFilter, page_data, page_of
from reviewapp.core.roles import CanReadAll, IsCoordinator
from reviewapp.inspiration import selectors, services
from reviewapp.inspiration.models import InspirationAudit, InspirationItem

OUTCOMES = ["not_retrieved", "positive", "negative", "failed", "pending"]


class CutoffOutputSerializer(serializers.Serializer):
    group = serializers.CharField()
    cutoff = serializers.CharField(source="cutoff.text")
    precision = serializers.CharField()
    last_day = serializers.DateField(source="cutoff.last_day")
    note = serializers.CharField()
    updated_at = serializers.DateTimeField()


class CutoffInput(serializers.Serializer):
    # The form of a day or a month; the service checks that it is a real one (invalid_cutoff).
    cutoff = serializers.RegexField(
        r"^[0-9]{4}-[0-9]{2}(-[0-9]{2})?$",
        max_length=10,
        help_text="YYYY-MM-DD or YYYY-MM",
        error_messages={"invalid": "This is not a day like 2026-05-14 or a month like 2026-05."},
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=500)


class CutoffListApi(APIView):
    """GET /api/v1/inspiration/cutoffs: every group's cutoff."""

    permission_classes = [CanReadAll]
    OutputSerializer = CutoffOutputSerializer
    FilterSerializer = PageFilter
    paged = True

    def get(self, request):
        return Response(page_data(CutoffOutputSerializer, selectors.cutoff_list(), request.query_params))


class CutoffSetApi(APIView):
    """PUT /api/v1/inspiration/cutoffs/{group} {"cutoff": "2026-05" | "2026-05-14", "note"?}."""

    permission_classes = [IsCoordinator]
    InputSerializer = CutoffInput
    OutputSerializer = CutoffOutputSerializer
    error_codes = {"PUT": {400: ("invalid_cutoff",)}, "DELETE": {}}

    def put(self, request, group: str):
        data = validated(CutoffInput, request.data)
        record = services.cutoff_set(group=group, cutoff=data["cutoff"], note=data.get("note", ""), user=request.user)
        return Response(CutoffOutputSerializer(record).data)

    @extend_schema(responses={204: None})
    def delete(self, request, group: str):
        services.cutoff_delete(group=group)
        return Response(status=204)


class AuditInput(serializers.Serializer):
    cohort = IdField(required=False)
    runs = serializers.ListField(
        child=serializers.UUIDField(), required=False, allow_empty=False, min_length=1, max_length=10_000
    )
    benchmark = IdField(required=False)
    window_start = serializers.DateField(
        required=False, allow_null=True, help_text="the publication window's first day: later literature from it on"
    )
    window_end = serializers.DateField(
        required=False, allow_null=True, help_text="the publication window's last day: later literature until it"
    )
    title_diagnostic = serializers.BooleanField(required=False, default=False)
    replay = IdField(required=False, allow_null=True, help_text="an earlier audit's id")


# The schema says what the service checks: exactly one population (a cohort, screening runs or a benchmark set),
# the other options alike.
class CohortAuditInput(AuditInput):
    cohort = IdField()
    runs = None
    benchmark = None


class RunsAuditInput(AuditInput):
    cohort = None
    runs = serializers.ListField(child=serializers.UUIDField(), allow_empty=False, min_length=1, max_length=10_000)
    benchmark = None


class BenchmarkAuditInput(AuditInput):
    cohort = None
    runs = None
    benchmark = IdField()


class AuditListOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.CharField()
    phase = serializers.CharField()
    population = serializers.CharField()
    window_start = serializers.DateField(allow_null=True)
    window_end = serializers.DateField(allow_null=True)
    simulated = serializers.BooleanField()
    progress = serializers.IntegerField()
    total = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class AuditListApi(APIView):
    """GET /api/v1/inspiration/audits: the most recent audits."""

    permission_classes = [CanReadAll]
    OutputSerializer = AuditListOutputSerializer
    FilterSerializer = PageFilter
    paged = True

    def get(self, request):
        return Response(page_data(AuditListOutputSerializer, selectors.audits_recent(limit=None), request.query_params))


class AuditCreateApi(APIView):
    """POST /api/v1/inspiration/audits: one of {"cohort": id}, {"runs": [run ids]}, {"benchmark": id}; optional
    "window_start", "window_end", "title_diagnostic", "replay" (an earlier audit whose judgements are reused) → 202."""

    permission_classes = [IsCoordinator]
    InputSerializer = AuditInput

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        state = serializers.CharField()

    success_status = 202
    error_codes = {
        400: (
            "invalid_audit",
            "missing_cutoffs",
            "unknown_cohort",
            "unknown_benchmark",
            "unknown_run",
            "unknown_audit",
        ),
        503: ("not_configured", "queue_unavailable"),
    }

    @extend_schema(
        request=PolymorphicProxySerializer(
            component_name="AuditCreateInput",
            serializers=[CohortAuditInput, RunsAuditInput, BenchmarkAuditInput],
            resource_type_field_name=None,
        )
    )
    def post(self, request):
        data = validated(AuditInput, request.data)
        audit = services.audit_create(**selectors.audit_population(data), user=request.user)
        return Response({"id": audit.pk, "state": audit.state}, status=202)


def _published(reference) -> str | None:
    if reference.published is None:
        return None
    formats = {"year": "%Y", "month": "%Y-%m"}
    return reference.published.strftime(formats.get(reference.published_precision, "%Y-%m-%d"))


def item_data(item: InspirationItem) -> dict:
    outcome = selectors.item_outcome(item)
    reference = item.candidate if item.retrieved and item.candidate is not None else None
    judgment = item.judgment
    return {
        "hypothesis": item.label,
        "group": item.group,
        "domain": item.domain,
        "retrieved": item.retrieved,
        "reference": None
        if reference is None
        else {
            "source": reference.source,
            "id": reference.source_id,
            "title": reference.title,
            "published": _published(reference),
        },
        "shared_terms": item.shared_terms if item.retrieved else [],
        "judgment": outcome,
        "evidence": judgment.quote if outcome == "positive" and judgment else "",
        "connection": judgment.connection if outcome == "positive" and judgment else "",
        "reason": judgment.reason if judgment and outcome != "not_retrieved" else "",
        "title_retrieved": item.title_retrieved,
    }


def audit_data(audit: InspirationAudit) -> dict:
    report = selectors.audit_summary(audit)
    return {
        "id": audit.pk,
        "state": audit.state,
        "phase": audit.phase,
        "error": audit.error,
        "population": audit.population,
        "cohort": audit.cohort_id,
        "benchmark": audit.benchmark_id,
        "runs": [str(run_id) for run_id in selectors.audit_run_ids(audit)],
        "window_start": audit.window_start,
        "window_end": audit.window_end,
        "title_diagnostic": audit.title_diagnostic,
        "replay_of": audit.replay_of_id,
        "simulated": audit.simulated,
        "progress": audit.progress,
        "total": audit.total,
        "created_at": audit.created_at,
        "finished_at": audit.finished_at,
        "cutoffs": audit.cutoffs,
        "corpus": audit.corpus or None,
        "judge": audit.judge,
        "prompt": {"version": audit.prompt.get("version"), "sha256": audit.prompt.get("sha256")},
        "totals": report["totals"],
        "rate": report["rate"],
        "retrieval_coverage": report["retrieval_coverage"],
        "positive_given_retrieved": report["positive_given_retrieved"],
        "by_group": report["by_group"],
        "by_domain": report["by_domain"],
        "title_diagnostic_result": report["title_diagnostic"],
        "replay": report.get("replay"),
        "items_url": reverse("api-inspiration-audit-items", args=[audit.pk]),
    }


class _Counts(serializers.Serializer):
    """A population's counts; each share has the counts it is made of beside it."""

    versions = serializers.IntegerField()
    retrieved = serializers.IntegerField()
    judged = serializers.IntegerField()
    failed = serializers.IntegerField()
    positive = serializers.IntegerField()
    negative = serializers.IntegerField()
    unverified = serializers.IntegerField(help_text="judged positive by the model, refused by the quote check")
    pending = serializers.IntegerField()


class _Shares(_Counts):
    """The shares of a population of at least one version (an audit is refused without versions, and a group or a
    domain is listed for its versions)."""

    rate = serializers.FloatField(help_text="positive / versions")
    retrieval_coverage = serializers.FloatField(help_text="retrieved / versions")
    positive_given_retrieved = serializers.FloatField(allow_null=True, help_text="null when nothing was retrieved")


class AuditTotalsSerializer(_Counts):
    date_too_coarse = serializers.IntegerField()
    judgments = serializers.IntegerField()
    replayed = serializers.IntegerField()


class AuditGroupSerializer(_Shares):
    group = serializers.CharField()
    cutoff = serializers.CharField(help_text="as recorded when the audit was started")
    precision = serializers.CharField()
    date_too_coarse = serializers.IntegerField()


class AuditDomainSerializer(_Shares):
    domain = serializers.CharField()


class TitleDiagnosticSerializer(serializers.Serializer):
    versions = serializers.IntegerField()
    retrieved_with_text = serializers.IntegerField()
    retrieved_with_title = serializers.IntegerField()
    change = serializers.IntegerField()
    coverage_with_text = serializers.FloatField()
    coverage_with_title = serializers.FloatField()


class TitleDiagnosticGroupSerializer(TitleDiagnosticSerializer):
    group = serializers.CharField()


class TitleDiagnosticResultSerializer(TitleDiagnosticSerializer):
    by_group = TitleDiagnosticGroupSerializer(many=True)


class CutoffSnapshotSerializer(serializers.Serializer):
    cutoff = serializers.CharField()
    precision = serializers.CharField()
    last_day = serializers.DateField()
    later_from = serializers.DateField(help_text="the first day of the group's later literature within the window")
    note = serializers.CharField()


class CorpusSnapshotSerializer(serializers.Serializer):
    references = serializers.IntegerField()
    dated = serializers.IntegerField()
    fingerprint = serializers.CharField()
    window_start = serializers.DateField(allow_null=True)
    window_end = serializers.DateField(allow_null=True)
    in_window = serializers.IntegerField(help_text="references whose publication period starts within the window")
    date_too_coarse = serializers.IntegerField()
    date_too_coarse_by_group = serializers.DictField(child=serializers.IntegerField())


class JudgeSnapshotSerializer(serializers.Serializer):
    display_name = serializers.CharField()
    company = serializers.CharField()
    model_id = serializers.CharField()
    protocol = serializers.CharField()
    simulated = serializers.BooleanField()
    temperature = serializers.FloatField(allow_null=True)
    request_seed = serializers.IntegerField(allow_null=True)
    simulator = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        allow_null=True,
        required=False,
        help_text="a simulated judge's server settings (seed and fault shares); null when none answered",
    )


class PromptSnapshotSerializer(serializers.Serializer):
    version = serializers.CharField()
    sha256 = serializers.CharField()


class ReplayCheckSerializer(serializers.Serializer):
    of = serializers.IntegerField()
    replayed_fingerprint = serializers.CharField(allow_null=True)
    corpus_matches = serializers.BooleanField(allow_null=True, help_text="null until both snapshots exist")
    warning = serializers.CharField()


class AuditReferenceSerializer(serializers.Serializer):
    source = serializers.CharField()
    id = serializers.CharField()
    title = serializers.CharField()
    published = serializers.CharField(allow_null=True, help_text="YYYY, YYYY-MM or YYYY-MM-DD as precise as known")


class AuditItemSerializer(serializers.Serializer):
    hypothesis = serializers.CharField()
    group = serializers.CharField()
    domain = serializers.CharField()
    retrieved = serializers.BooleanField()
    reference = AuditReferenceSerializer(allow_null=True)
    shared_terms = serializers.ListField(child=serializers.CharField())
    judgment = serializers.CharField(help_text="not_retrieved, positive, negative, failed or pending")
    evidence = serializers.CharField()
    connection = serializers.CharField()
    reason = serializers.CharField()
    title_retrieved = serializers.BooleanField(allow_null=True, help_text="null without the title diagnostic")


class AuditSerializer(serializers.Serializer):
    """An inspiration audit (docs/protocol.md#inspiration-audit): its state, population, window, snapshots, every
    count and its items."""

    id = serializers.IntegerField()
    state = serializers.CharField()
    phase = serializers.CharField()
    error = serializers.CharField()
    population = serializers.CharField()
    cohort = serializers.IntegerField(allow_null=True)
    benchmark = serializers.IntegerField(allow_null=True)
    runs = serializers.ListField(child=serializers.UUIDField())
    window_start = serializers.DateField(allow_null=True, help_text="null where the window is open")
    window_end = serializers.DateField(allow_null=True)
    title_diagnostic = serializers.BooleanField()
    replay_of = serializers.IntegerField(allow_null=True)
    simulated = serializers.BooleanField()
    progress = serializers.IntegerField()
    total = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    cutoffs = serializers.DictField(child=CutoffSnapshotSerializer(), help_text="group → its cutoff")
    corpus = CorpusSnapshotSerializer(allow_null=True, help_text="null until the audit starts")
    judge = JudgeSnapshotSerializer()
    prompt = PromptSnapshotSerializer()
    totals = AuditTotalsSerializer()
    rate = serializers.FloatField(help_text="positive / versions (an audit has at least one version)")
    retrieval_coverage = serializers.FloatField()
    positive_given_retrieved = serializers.FloatField(allow_null=True, help_text="null when nothing was retrieved")
    by_group = AuditGroupSerializer(many=True)
    by_domain = AuditDomainSerializer(many=True)
    title_diagnostic_result = TitleDiagnosticResultSerializer(allow_null=True)
    replay = ReplayCheckSerializer(allow_null=True, help_text="for a replay: whether it searched the same corpus")
    items_url = serializers.CharField(
        help_text="the address of its items, a page at a time (`totals.versions` of them in all)"
    )


class AuditItemsQuery(PageFilter):
    group = serializers.CharField(required=False, allow_blank=True, max_length=200)
    judgment = serializers.ChoiceField(choices=OUTCOMES, required=False)


class AuditDetailApi(APIView):
    """GET /api/v1/inspiration/audits/{id}: the state and every count; the items are at `items`."""

    permission_classes = [CanReadAll]

    OutputSerializer = AuditSerializer

    def get(self, request, audit_id: int):
        return Response(audit_data(selectors.audit_get(audit_id=audit_id)))


class AuditItemsApi(APIView):
    """GET /api/v1/inspiration/audits/{id}/items: the audit's items in population order, a page at a time (?group=,
    ?judgment= filter them)."""

    permission_classes = [CanReadAll]
    FilterSerializer = AuditItemsQuery
    paged = True

    OutputSerializer = AuditItemSerializer

    def get(self, request, audit_id: int):
        audit = selectors.audit_get(audit_id=audit_id)
        query = validated_query(AuditItemsQuery, request.query_params)
        items = selectors.audit_items(audit, group=query.get("group", ""), outcome=query.get("judgment", ""))
        page = page_of(items, query)
        return Response({**page, "results": [item_data(item) for item in page["results"]]})
