"""API of the literature area.

POST /api/v1/literature/import: multipart "file" and "format" (pubmed_xml, medline, ris or csv), optionally "mapping"
(CSV columns, a JSON object {field: column}). POST/GET /api/v1/literature/checks: novelty checks of proposals.
"""

from django.shortcuts import get_object_or_404
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from literature.models import NoveltyCheck
from literature.novelty import proposal_novelty_check_request
from literature.services import FORMATS, references_import
from reviewapp.core.errors import ServiceError
from reviewapp.core.roles import CanReadAll, IsCoordinator
from reviewapp.models import Proposal
from screening import llm
from screening.llm.models import RosterMember


class ReferenceImportApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        # An empty file reaches the importer, which explains the problem like any other.
        file = serializers.FileField(allow_empty_file=True)
        format = serializers.ChoiceField(choices=list(FORMATS))
        mapping = serializers.CharField(required=False, allow_blank=True, trim_whitespace=True)

    class OutputSerializer(serializers.Serializer):
        import_id = serializers.IntegerField()
        format = serializers.CharField()
        records = serializers.IntegerField()
        created = serializers.IntegerField()
        updated = serializers.IntegerField()
        unchanged = serializers.IntegerField()
        repeated = serializers.IntegerField()
        seconds = serializers.FloatField()

    def post(self, request):
        data = self.InputSerializer(data=request.data)
        if not data.is_valid():
            records = [
                {"record": None, "id": "", "field": name, "message": " ".join(str(message) for message in messages)}
                for name, messages in data.errors.items()
            ]
            raise ServiceError(
                f"Send the file as the multipart field “file” and its “format”: one of {', '.join(FORMATS)}.",
                code="invalid_import",
                records=records,
            )
        upload = data.validated_data["file"]
        summary = references_import(
            file=upload,
            format=data.validated_data["format"],
            column_mapping=data.validated_data.get("mapping") or None,
            user=request.user,
            name=upload.name,
        )

        return Response(self.OutputSerializer(summary).data)


class NoveltyCheckOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.CharField()
    proposal = serializers.CharField(source="proposal.external_id")
    published_before = serializers.DateField(allow_null=True)
    verdict = serializers.CharField()
    evidence = serializers.CharField()
    reference = serializers.JSONField(source="citation", allow_null=True)
    reason = serializers.CharField()
    unsupported = serializers.BooleanField()
    components = serializers.JSONField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class NoveltyCheckCreateApi(APIView):
    """POST /api/v1/literature/checks {"proposal": id, "published_before"?}: check one proposal on demand (202)."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        proposal = serializers.CharField()
        published_before = serializers.DateField(required=False, allow_null=True)

    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        proposal = Proposal.objects.select_related("task").filter(external_id=data.validated_data["proposal"]).first()
        if proposal is None:
            raise ServiceError(f"No proposal has the id “{data.validated_data['proposal']}”.", code="unknown_proposal")
        endpoint = llm.roster_endpoint(RosterMember.Role.NOVELTY)
        if endpoint is None:
            raise ServiceError("The default roster names no literature judge.", code="not_configured", status=503)
        check = proposal_novelty_check_request(
            proposal=proposal, endpoint=endpoint, published_before=data.validated_data.get("published_before")
        )
        return Response(NoveltyCheckOutputSerializer(check).data, status=202)


class NoveltyCheckDetailApi(APIView):
    """GET /api/v1/literature/checks/<id>: the state and, once done, the verdict with its evidence."""

    permission_classes = [CanReadAll]

    def get(self, request, check_id: int):
        check = get_object_or_404(NoveltyCheck.objects.select_related("proposal"), pk=check_id, proposal__isnull=False)
        return Response(NoveltyCheckOutputSerializer(check).data)
