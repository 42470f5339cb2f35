"""Helpers every room's pages share: a form's whole number, a figure's file as a response, an import page's upload."""

from collections.abc import Callable

from django.http import HttpResponse

from reviewapp.core.errors import page_errors

# The media type of each file format a figure is offered in: its table as CSV, its plot as PNG or SVG.
FIGURE_FORMATS = {"csv": "text/csv; charset=utf-8", "png": "image/png", "svg": "image/svg+xml"}


def int_or_none(value: str | None) -> int | None:
    """A form value as a whole number; None when it is empty or not a number."""
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def figure_response(content: bytes, file_format: str, filename: str) -> HttpResponse:
    """A figure's file: its table as a CSV download, its plot shown in the browser."""
    response = HttpResponse(content, content_type=FIGURE_FORMATS[file_format])
    disposition = "attachment" if file_format == "csv" else "inline"
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    return response


def posted_import(request, import_file: Callable, *, read_upload: Callable, **target):
    """Import the file posted to an import page into target (cohort= or benchmark=, as import_file takes it).
    read_upload(request.FILES) is the API's own reading of the upload (its refusal when no file came).

    (result, problems, error): the import's result, or the refusal and the rows it names (None when it names none).
    """
    result = None
    with page_errors() as outcome:
        upload = read_upload(request.FILES)
        result = import_file(**target, filename=upload.name, content=upload.read(), user=request.user)
    problems = getattr(outcome.error, "rows", None)
    return result, problems, outcome.error
