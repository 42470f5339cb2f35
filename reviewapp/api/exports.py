"""API: a cohort's reviews as CSV (streamed) and XLSX (written to a temporary file, then streamed).

Coordinators and analysts get the same export, with the authorship columns (author, author company, method, source
run): neither role is blinded to authorship (docs/protocol.md#blinding); reviewers reach no export.
"""

import tempfile

from django.http import FileResponse, StreamingHttpResponse
from django.urls import path
from django.utils.http import content_disposition_header
from django.utils.text import slugify
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from reviewapp.core import roles
from reviewapp.core.errors import ServiceError
from reviewapp.core.roles import CanReadAll
from reviewapp.core.schema import file_response
from reviewapp.models import Cohort
from reviewapp.selectors.cohorts import cohort_for_user
from reviewapp.selectors.exports import export_sheets, review_export_csv, review_export_rows, write_xlsx

LAYOUTS = ("wide", "long")


class FileContentNegotiation(BaseContentNegotiation):
    """The file is the answer whatever the client accepts; errors are always JSON."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _filename(cohort: Cohort, suffix: str) -> str:
    return f"{slugify(cohort.name) or 'cohort'}-{cohort.pk}-{suffix}"


class CohortReviewsCsvApi(APIView):
    permission_classes = [CanReadAll]
    content_negotiation_class = FileContentNegotiation

    class FilterSerializer(serializers.Serializer):
        layout = serializers.ChoiceField(choices=list(LAYOUTS), required=False, help_text="wide (default) or long")

    error_codes = {400: ("invalid_layout",)}

    @extend_schema(
        responses=file_response(
            "text/csv", "One row per review (long: per review and criterion), with the authorship columns."
        )
    )
    def get(self, request, cohort_id):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        layout = request.query_params.get("layout", "wide")
        if layout not in LAYOUTS:
            raise ServiceError("The layout must be 'wide' or 'long'.", code="invalid_layout")
        chunks = review_export_csv(cohort=cohort, unblinded=roles.can_read_all(request.user), layout=layout)
        response = StreamingHttpResponse(chunks, content_type="text/csv; charset=utf-8")
        suffix = "reviews.csv" if layout == "wide" else "reviews-long.csv"
        response["Content-Disposition"] = content_disposition_header(True, _filename(cohort, suffix))
        return response


class CohortReviewsXlsxApi(APIView):
    permission_classes = [CanReadAll]
    content_negotiation_class = FileContentNegotiation

    @extend_schema(
        responses=file_response(
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "The reviews as an XLSX workbook, one row per review.",
        )
    )
    def get(self, request, cohort_id):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        rows = review_export_rows(cohort=cohort, unblinded=roles.can_read_all(request.user))
        # An anonymous temporary file: removed when the response closes it, however the download ends.
        workbook_file = tempfile.TemporaryFile(suffix=".xlsx")
        try:
            write_xlsx(rows, workbook_file, title="reviews", extra_sheets=export_sheets(cohort))
        except BaseException:
            workbook_file.close()
            raise
        workbook_file.seek(0)
        return FileResponse(
            workbook_file,
            as_attachment=True,
            filename=_filename(cohort, "reviews.xlsx"),
            content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )


urlpatterns = [
    path("cohorts/<int:cohort_id>/reviews.csv", CohortReviewsCsvApi.as_view(), name="api-cohort-reviews-csv"),
    path("cohorts/<int:cohort_id>/reviews.xlsx", CohortReviewsXlsxApi.as_view(), name="api-cohort-reviews-xlsx"),
]
