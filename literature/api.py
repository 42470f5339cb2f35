"""API of the literature area.

POST /api/v1/literature/import: multipart "file", optionally "format" (pubmed_xml, medline, ris, wos, bibtex or csv;
left out, it is told from the file's content) and "mapping" (CSV columns, a JSON object {field: column}).
POST/GET /api/v1/literature/checks: novelty checks of proposals. POST/GET /api/v1/literature/citation-waves: building
the corpus by citation wave, from anchors typed in or from a cohort's or benchmark set's tasks' sources.
"""

import csv
import itertools

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from literature import selectors
from literature.novelty import proposal_novelty_check_request
from literature.services import FORMATS, LISTED_AT_MOST, ImportInvalid, references_import
from literature.waves import MAX_ANCHORS, citation_wave_begin
from reviewapp.core.errors import InputInvalid, ServiceError, validated
from reviewapp.core.paging import PageFilter, page_data
from reviewapp.core.roles import CanReadAll, IsCoordinator
from reviewapp.core.schema import file_response
from screening import llm
from screening.llm.models import RosterMember


class ReferenceImportInput(serializers.Serializer):
    # An empty file reaches the importer, which explains the problem like any other.
    file = serializers.FileField(allow_empty_file=True)
    format = serializers.ChoiceField(
        choices=list(FORMATS),
        required=False,
        allow_blank=True,
        help_text="left out (or empty), the format is told from the file's content; a declared format that the "
        "content shows to be another is refused with invalid_import, naming the one detected",
    )
    mapping = serializers.CharField(required=False, allow_blank=True, trim_whitespace=True)


def import_request(data) -> dict:
    """The file, format and CSV column mapping of an import, from a page or the API (`references_import` keywords);
    ImportInvalid naming the fields at fault."""
    try:
        values = validated(ReferenceImportInput, data)
    except InputInvalid as error:
        records = [
            {"record": None, "id": "", "field": name, "message": " ".join(str(message) for message in messages)}
            for name, messages in error.fields.items()
        ]
        raise ImportInvalid(records) from None
    return {
        "file": values["file"],
        "format": values.get("format") or None,
        "column_mapping": values.get("mapping") or None,
    }


class ReferenceImportApi(APIView):
    body_limit_setting = "OH_MAX_REFERENCE_IMPORT_BYTES"  # reviewapp.core.requests
    permission_classes = [IsCoordinator]
    parser_classes = [MultiPartParser]

    class OutputSerializer(serializers.Serializer):
        import_id = serializers.IntegerField()
        format = serializers.CharField()
        format_detected = serializers.BooleanField(help_text="the format was told from the file's content")
        records = serializers.IntegerField()
        created = serializers.IntegerField()
        updated = serializers.IntegerField()
        unchanged = serializers.IntegerField()
        repeated = serializers.IntegerField()

        class SkippedRecord(serializers.Serializer):
            record = serializers.IntegerField(allow_null=True, help_text="its number in the file; null for stray lines")
            id = serializers.CharField(allow_blank=True, help_text="its id in the source, when it has one")
            reason = serializers.CharField()

        class Warning(serializers.Serializer):
            record = serializers.IntegerField(allow_null=True, help_text="its number in the file")
            id = serializers.CharField(allow_blank=True, help_text="its id in the source, when it has one")
            field = serializers.CharField(help_text="the field left out")
            message = serializers.CharField()

        skipped = SkippedRecord(many=True, help_text=f"unusable records, the first {LISTED_AT_MOST}")
        skipped_count = serializers.IntegerField()
        warnings = Warning(many=True, help_text=f"fields left out of imported records, the first {LISTED_AT_MOST}")
        warning_count = serializers.IntegerField()
        seconds = serializers.FloatField()

    InputSerializer = ReferenceImportInput
    error_codes = {400: ("invalid_import",)}

    def post(self, request):
        values = import_request(request.data)
        summary = references_import(**values, user=request.user, name=values["file"].name)
        return Response(self.OutputSerializer(summary).data)


class CitationSerializer(serializers.Serializer):
    """A reference of the corpus as a check cites it."""

    source = serializers.CharField()
    id = serializers.CharField(help_text="its id in the source")
    title = serializers.CharField()
    year = serializers.IntegerField(allow_null=True)
    link = serializers.CharField(allow_blank=True, help_text="its PubMed or DOI address; empty when it has neither")


class ComponentEvidenceSerializer(serializers.Serializer):
    part = serializers.CharField(help_text="the part of the hypothesis (cause, effect…)")
    text = serializers.CharField(help_text="the part's text")
    evidence = serializers.CharField(help_text="the quote that reports it")
    citation = CitationSerializer()


class NoveltyCheckOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.CharField()
    proposal = serializers.CharField(source="proposal.external_id")
    published_before = serializers.DateField(allow_null=True)
    verdict = serializers.CharField()
    evidence = serializers.CharField()
    reference = CitationSerializer(
        source="citation", allow_null=True, help_text="the reference that reports it, if any"
    )
    reason = serializers.CharField()
    error = serializers.CharField(help_text="why the check failed (e.g. its worker stopped), when it did")
    unsupported = serializers.BooleanField()
    components = ComponentEvidenceSerializer(many=True, help_text="components_reported: the evidence of each part")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class NoveltyCheckCreateApi(APIView):
    """POST /api/v1/literature/checks {"proposal": id, "published_before"?}: check one proposal on demand (202)."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        proposal = serializers.CharField()
        published_before = serializers.DateField(required=False, allow_null=True)

    OutputSerializer = NoveltyCheckOutputSerializer
    success_status = 202
    error_codes = {400: ("unknown_proposal",), 503: ("not_configured", "queue_unavailable")}

    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        proposal = selectors.proposal_for_check(data["proposal"])
        endpoint = llm.roster_endpoint(RosterMember.Role.NOVELTY)
        if endpoint is None:
            raise ServiceError("The default roster names no literature judge.", code="not_configured", status=503)
        check = proposal_novelty_check_request(
            proposal=proposal, endpoint=endpoint, published_before=data.get("published_before")
        )
        return Response(NoveltyCheckOutputSerializer(check).data, status=202)


class NoveltyCheckDetailApi(APIView):
    """GET /api/v1/literature/checks/<id>: the state and, once done, the verdict with its evidence."""

    permission_classes = [CanReadAll]
    OutputSerializer = NoveltyCheckOutputSerializer

    def get(self, request, check_id: int):
        check = selectors.proposal_novelty_check_get(check_id=check_id)
        return Response(NoveltyCheckOutputSerializer(check).data)


class TaskSourcesSerializer(serializers.Serializer):
    task = serializers.CharField(help_text="the research task's key")
    sources = serializers.ListField(child=serializers.CharField(), help_text='"pmid:123", "doi:10.1000/x"')


class CitationWaveOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.CharField()
    phase = serializers.CharField()
    anchors = serializers.ListField(child=serializers.CharField())
    origin = serializers.CharField(help_text="anchors (typed in), cohort or benchmark (their tasks' sources)")
    origin_id = serializers.IntegerField(allow_null=True, help_text="the cohort's or benchmark set's id")
    origin_name = serializers.CharField()
    task_sources = TaskSourcesSerializer(many=True)
    source_dois = serializers.ListField(child=serializers.CharField(), help_text="DOIs found in Europe PMC")
    unresolved_sources = serializers.ListField(child=serializers.CharField())
    corpus_sha256 = serializers.CharField(help_text="the content hash of the finished wave's corpus")
    progress = serializers.IntegerField()
    total = serializers.IntegerField()
    traversals = serializers.IntegerField()
    edges = serializers.IntegerField()
    unmatched = serializers.IntegerField()
    works = serializers.IntegerField()
    resolved = serializers.IntegerField()
    unresolved = serializers.IntegerField()
    requests = serializers.IntegerField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class CitationWaveInput(serializers.Serializer):
    """One of: anchors typed in, a cohort, a benchmark set (whose tasks' source publications are the anchors)."""

    anchors = serializers.ListField(
        child=serializers.CharField(max_length=100),
        allow_empty=False,
        min_length=1,
        max_length=MAX_ANCHORS,
        required=False,
    )
    cohort = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False)
    benchmark = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False)

    def validate(self, data):
        given = [name for name in ("anchors", "cohort", "benchmark") if name in data]
        if len(given) != 1:
            raise serializers.ValidationError("Give exactly one of anchors, cohort and benchmark.")
        return data


class CitationWaveCreateApi(APIView):
    """POST /api/v1/literature/citation-waves {"anchors": ["MED:…", …]} or {"cohort": id} or {"benchmark": id}: start
    a wave (202), from anchors typed in or from the source publications of the tasks."""

    permission_classes = [IsCoordinator]
    InputSerializer = CitationWaveInput
    OutputSerializer = CitationWaveOutputSerializer
    success_status = 202
    error_codes = {400: ("invalid_anchors",), 503: ("queue_unavailable",)}

    def post(self, request):
        data = validated(CitationWaveInput, request.data)
        wave = citation_wave_begin(**data, user=request.user)
        return Response(CitationWaveOutputSerializer(wave).data, status=202)


class CitationWaveListApi(APIView):
    """GET /api/v1/literature/citation-waves: the most recent waves."""

    permission_classes = [CanReadAll]
    OutputSerializer = CitationWaveOutputSerializer
    FilterSerializer = PageFilter
    paged = True

    def get(self, request):
        return Response(
            page_data(CitationWaveOutputSerializer, selectors.citation_waves_recent(limit=None), request.query_params)
        )


class CitationWaveDetailApi(APIView):
    """GET /api/v1/literature/citation-waves/<id>: the state and the counts."""

    permission_classes = [CanReadAll]
    OutputSerializer = CitationWaveOutputSerializer

    def get(self, request, wave_id: int):
        return Response(CitationWaveOutputSerializer(selectors.citation_wave_get(wave_id=wave_id)).data)


class _Echo:
    def write(self, value):
        return value


class CitationWaveEdgesApi(APIView):
    """GET /api/v1/literature/citation-waves/<id>/edges.csv: every edge, citing, cited and direction."""

    permission_classes = [CanReadAll]

    @extend_schema(responses=file_response("text/csv", "Every edge of the wave: citing, cited, direction."))
    def get(self, request, wave_id: int):
        wave = selectors.citation_wave_get(wave_id=wave_id)
        writer = csv.writer(_Echo())
        rows = selectors.citation_wave_edges(wave)
        body = (writer.writerow(row) for row in itertools.chain([("citing", "cited", "direction")], rows))
        response = StreamingHttpResponse(body, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="citation-wave-{wave.pk}-edges.csv"'
        return response
