"""One error contract for every room.

A service refuses a write by raising a ServiceError: a documented code, a sentence for the person who asked, an HTTP
status, and, where the refusal has several parts (the rows of an import, the fields of a body), its problems. The API
answers every error, ours or the framework's, in one shape, through `reviewapp.core.api_errors.exception_handler`:

    {"error": "<code>", "detail": "<sentence>", "problems": [{"table"?, "row"?, "field"?, "message"}]}

Page views validate with the API's own input declaration (`validated`) and show refusals with `page_errors`, so a page
and the API never disagree.

Statuses: 400 a request that is not valid in itself; 404 what it names does not exist; 409 a valid request that
conflicts with the current state of what it names (a closed cohort, a started assignment, a name taken); 422 a review
whose values the protocol refuses; 503 a service the request needs is not there.
"""

from collections.abc import Collection, Iterable, Iterator
from typing import NotRequired, TypedDict

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import status

from reviewapp.core.fields import RowsField
from reviewapp.core.text import control_character_problem


class Problem(TypedDict):
    """One part of a refusal: where (a table of a file, its row, a field) and what."""

    table: NotRequired[str]
    row: NotRequired[int]
    field: NotRequired[str]
    message: str


def problem(message: str, *, table: str | None = None, row: int | None = None, field: str | None = None) -> Problem:
    """A Problem with only the places that are known."""
    found: Problem = {"message": message}
    if table:
        found["table"] = table
    if row is not None:
        found["row"] = row
    if field:
        found["field"] = field
    return found


def as_problems(rows) -> list[Problem]:
    """Problems from dicts that hold some of "table", "row", "field" (None where unknown) and a "message"."""
    return [problem(row["message"], table=row.get("table"), row=row.get("row"), field=row.get("field")) for row in rows]


class ServiceError(Exception):
    """A request the rules refuse.

    `ServiceError("invalid_request", "The sentence.")`, or `ServiceError("The sentence.", code=...)`; subclasses name
    their code and status as class attributes. `problems` lists the parts of the refusal (see `problem`);
    `retry_after` (seconds) becomes the Retry-After header."""

    code = "invalid_request"
    status: int = status.HTTP_400_BAD_REQUEST

    def __init__(
        self,
        *code_and_message: str,
        code: str | None = None,
        status: int | None = None,
        problems: list[Problem] | None = None,
        retry_after: int | None = None,
    ):
        if len(code_and_message) == 2:
            code, message = code_and_message
        else:
            (message,) = code_and_message
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.problems: list[Problem] = list(problems or [])
        self.retry_after = retry_after


class NotFound(ServiceError, Http404):
    """What the request names does not exist, or not for this user (404). Also Django's Http404, so a page that does not
    catch it answers its 404 page, as the API answers its body."""

    code = "not_found"
    status = status.HTTP_404_NOT_FOUND


class Forbidden(ServiceError, PermissionDenied):
    """The rules refuse this user what they asked (403): a service's own check of who may do it. Also Django's
    PermissionDenied, so a page that does not catch it answers its 403 page."""

    code = "forbidden"
    status = status.HTTP_403_FORBIDDEN


class StateConflict(ServiceError):
    """A valid request that the current state of what it names refuses (409), with its own code."""

    status = status.HTTP_409_CONFLICT


class InputInvalid(ServiceError):
    """A request whose fields do not fit the declaration: one problem per field and message. The items of the fields
    named in `rows` are records: their problems name the row (from 1) and the record's field."""

    code = "invalid_body"

    def __init__(self, fields: dict, *, where: str = "body", rows: Collection[str] = ()):
        self.fields = fields
        self.rows = rows
        super().__init__(f"The request {where} is not valid.", problems=list(self._problems()))

    def _problems(self) -> Iterator[Problem]:
        for name, errors in self.fields.items():
            if name in self.rows and isinstance(errors, dict | list) and not _is_messages(errors):
                numbered = errors.items() if isinstance(errors, dict) else enumerate(errors)
                for index, inner in numbered:
                    for field, message in _field_messages(inner):
                        yield problem(str(message), row=int(index) + 1, field=_field_name(field))
            else:
                for field, message in _field_messages(errors, str(name)):
                    yield problem(str(message), field=field)

    def sentences(self) -> list[str]:
        """One sentence per problem, for a page: "<field>: <problem>", "Row <n>, <field>: <problem>"."""
        lines = []
        for found in self.problems:
            place = found.get("field", "")
            place = place.replace("_", " ").capitalize() if place != "non_field_errors" else ""
            if "row" in found:
                place = f"Row {found['row']}, {place}" if place else f"Row {found['row']}"
            lines.append(f"{place}: {found['message']}" if place else found["message"])
        return lines


def _is_messages(errors) -> bool:
    """Whether DRF's errors for a list field are its own messages ("This list may not be empty.") rather than its
    items' ({index: errors})."""
    return isinstance(errors, list) and not any(isinstance(item, dict | list) for item in errors)


def _field_name(name: str) -> str | None:
    """A record's field as a problem names it: none for the record as a whole."""
    return None if name in ("", "non_field_errors") else name


def _field_messages(errors, where: str = ""):
    """(field, message) of DRF's errors, nested ones named by their path: {"b": {0: {"c": ["…"]}}} → ("b.0.c", "…")."""
    if isinstance(errors, dict):
        for name, inner in errors.items():
            yield from _field_messages(inner, f"{where}.{name}" if where else str(name))
    elif isinstance(errors, list) and any(isinstance(item, dict | list) for item in errors):
        for index, inner in enumerate(errors):
            yield from _field_messages(inner, f"{where}.{index}")
    elif isinstance(errors, list):
        for message in errors:
            yield where, message
    else:
        yield where, errors


def _control_characters(data, where: str = "") -> Iterator[tuple[str, list[str]]]:
    """(field path, [sentence]) for each text in the data that holds a control character (reviewapp.core.text), before
    the serializer reads it: its own check would refuse a NUL only, as a "null character"."""
    items: Iterable[tuple[object, object]]
    if hasattr(data, "lists"):  # a QueryDict: a name may have several values
        items = [(name, value) for name, values in data.lists() for value in values]
    elif isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list | tuple):
        items = enumerate(data)
    elif isinstance(data, str) and (found := control_character_problem(data)):
        yield where, [f"Control characters are not allowed: {found[0].lower()}{found[1:]}"]
        return
    else:
        return
    for name, value in items:
        yield from _control_characters(value, f"{where}.{name}" if where else str(name))


def validated(declaration, data, *, where: str = "body", **context) -> dict:
    """The values of `data` checked against an input serializer class; raises InputInvalid. `where` names what the
    values came from, for the sentence: "body", or "query" (`validated_query`)."""
    controls = dict(_control_characters(data))
    if controls:
        raise InputInvalid(controls, where=where)
    serializer = declaration(data=data, context=context)
    if not serializer.is_valid():
        rows = [name for name, field in serializer.fields.items() if isinstance(field, RowsField)]
        raise InputInvalid(serializer.errors, where=where, rows=rows)
    return serializer.validated_data


def validated_query(declaration, query_params, **context) -> dict:
    """`validated` for a query string. A parameter given with no value (`?user=`) is refused, as the schema's
    minLength says, unless its field allows blank: DRF would read it as left out and answer as if it were absent."""
    fields = declaration().fields
    empty = {
        name: ["May not be empty: give a value or leave the parameter out."]
        for name in query_params
        if name in fields and query_params.get(name) == "" and not getattr(fields[name], "allow_blank", False)
    }
    if empty:
        raise InputInvalid(empty, where="query")
    return validated(declaration, query_params, where="query", **context)


class page_errors:  # noqa: N801 (used as a statement: `with page_errors(request) as outcome:`)
    """For page views: a ServiceError raised inside the block becomes a message for the user (or lines in `into`,
    for a form that shows its own errors) and `outcome.error`, instead of an exception."""

    def __init__(self, request=None, *, into: list | None = None):
        self.request = request
        self.into = into
        self.error: ServiceError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if not isinstance(error, ServiceError):
            return False
        self.error = error
        lines = error.sentences() if isinstance(error, InputInvalid) else [error.message]
        if self.into is not None:
            self.into.extend(lines)
        elif self.request is not None:
            for line in lines:
                messages.error(self.request, line)
        return True
