"""API: import research tasks and proposals into a cohort. POST /api/v1/cohorts/<id>/import, multipart "file"."""

from django.urls import path
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.api.errors import ApiError
from reviewapp.api.permissions import IsCoordinator
from reviewapp.models import Cohort
from reviewapp.services.imports import CohortFrozen, ImportInvalid, cohort_import_file


class CohortImportApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        # An empty file reaches the import, which explains the problem like any other.
        file = serializers.FileField(allow_empty_file=True)

    class OutputSerializer(serializers.Serializer):
        tasks = serializers.IntegerField()
        proposals = serializers.IntegerField()
        new_tasks = serializers.IntegerField()
        new_proposals = serializers.IntegerField()
        already_imported = serializers.BooleanField()

    def post(self, request, cohort_id):
        cohort = Cohort.objects.filter(pk=cohort_id).first()
        if cohort is None:
            raise ApiError("not_found", "There is no such cohort.", status.HTTP_404_NOT_FOUND)
        data = self.InputSerializer(data=request.data)
        if not data.is_valid():
            raise ApiError(
                "invalid_import",
                "Send the file to import as the multipart field “file”.",
                rows=[{"table": "file", "row": None, "field": "file", "message": "No file was sent."}],
            )
        upload = data.validated_data["file"]
        try:
            result = cohort_import_file(cohort=cohort, filename=upload.name, content=upload.read(), user=request.user)
        except ImportInvalid as exc:
            raise ApiError(
                "invalid_import",
                f"The file has {len(exc.rows)} problem(s); nothing was imported.",
                rows=exc.rows,
            ) from exc
        except CohortFrozen as exc:
            raise ApiError("cohort_frozen", str(exc), status.HTTP_409_CONFLICT) from exc
        return Response(self.OutputSerializer(result).data)


urlpatterns = [path("cohorts/<int:cohort_id>/import", CohortImportApi.as_view(), name="api-cohort-import")]
