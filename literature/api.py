"""API: import references into the corpus. POST /api/v1/literature/import, multipart "file" and "format"
(pubmed_xml, medline, ris or csv), optionally "mapping" (CSV columns, a JSON object {field: column})."""

from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from literature.services import FORMATS, ImportInvalid, references_import
from reviewapp.api.errors import ApiError
from reviewapp.api.permissions import IsCoordinator


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
            raise ApiError(
                "invalid_import",
                f"Send the file as the multipart field “file” and its “format”: one of {', '.join(FORMATS)}.",
                records=records,
            )
        upload = data.validated_data["file"]
        try:
            summary = references_import(
                file=upload,
                format=data.validated_data["format"],
                column_mapping=data.validated_data.get("mapping") or None,
                user=request.user,
                name=upload.name,
            )
        except ImportInvalid as exc:
            raise ApiError(
                "invalid_import",
                f"The file has {len(exc.problems)} problem(s); nothing was imported.",
                records=exc.problems,
            ) from exc
        return Response(self.OutputSerializer(summary).data)
