"""API: import research tasks and proposals into a cohort. POST /api/v1/cohorts/<id>/import, multipart "file"."""

from django.urls import path
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.core.errors import InputInvalid, validated
from reviewapp.core.roles import IsCoordinator
from reviewapp.selectors.cohorts import cohort_for_user
from reviewapp.services.imports import cohort_import_file
from reviewapp.services.tabular_files import FILE, ImportInvalid, problem


class ImportFileInput(serializers.Serializer):
    # An empty file reaches the import, which explains the problem like any other.
    file = serializers.FileField(allow_empty_file=True)


def import_upload(data):
    """The file of an import request, from a page or the API; ImportInvalid (a problem of the file) when none came."""
    try:
        return validated(ImportFileInput, data)["file"]
    except InputInvalid:
        message = "No file was sent: choose a file to import (the multipart field “file”)."
        raise ImportInvalid([problem(FILE, None, "file", message)]) from None


class CohortImportApi(APIView):
    body_limit_setting = "OH_MAX_IMPORT_BYTES"  # reviewapp.core.requests
    permission_classes = [IsCoordinator]
    parser_classes = [MultiPartParser]

    class OutputSerializer(serializers.Serializer):
        tasks = serializers.IntegerField()
        proposals = serializers.IntegerField()
        new_tasks = serializers.IntegerField()
        new_proposals = serializers.IntegerField()
        already_imported = serializers.BooleanField()

    InputSerializer = ImportFileInput
    error_codes = {400: ("invalid_import",), 409: ("cohort_frozen",)}

    def post(self, request, cohort_id):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, coordinate=True)
        upload = import_upload(request.data)
        result = cohort_import_file(cohort=cohort, filename=upload.name, content=upload.read(), user=request.user)
        return Response(self.OutputSerializer(result).data)


urlpatterns = [path("cohorts/<int:cohort_id>/import", CohortImportApi.as_view(), name="api-cohort-import")]
