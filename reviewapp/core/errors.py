"""One error contract for every room.

A service refuses a write by raising a ServiceError: a sentence for the person who asked, a documented code and an
HTTP status. The API answers every error, ours or the framework's, as {"error": "<code>", "detail": "<sentence>"}
plus any details (e.g. the rows of an import at fault), through `reviewapp.core.api_errors.exception_handler`. Page
views validate with the API's own input declaration (`validated`) and show refusals with `page_errors`, so a page and
the API never disagree.
"""

from django.contrib import messages
from rest_framework import status


class ServiceError(Exception):
    """A request the rules refuse. Subclasses name their code and status; details go into the API's answer."""

    code = "invalid_request"
    status: int = status.HTTP_400_BAD_REQUEST

    def __init__(
        self, message: str, *, code: str | None = None, status: int | None = None, retry_after=None, **details
    ):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.retry_after = retry_after
        self.details = details


class NotFound(ServiceError):
    code = "not_found"
    status = status.HTTP_404_NOT_FOUND


class InputInvalid(ServiceError):
    """A request whose fields do not fit the declaration; `fields` maps each field to its problems."""

    code = "invalid_body"

    def __init__(self, fields: dict):
        super().__init__("The request body is not valid.", fields=fields)

    def sentences(self) -> list[str]:
        """One sentence per problem, for a page: "<field>: <problem>"."""
        return [
            f"{name.replace('_', ' ').capitalize()}: {message}" if name != "non_field_errors" else str(message)
            for name, problems in self.details["fields"].items()
            for message in (problems if isinstance(problems, list) else [problems])
        ]


def validated(declaration, data, **context) -> dict:
    """The values of `data` checked against an input serializer class; raises InputInvalid."""
    serializer = declaration(data=data, context=context)
    if not serializer.is_valid():
        raise InputInvalid(serializer.errors)
    return serializer.validated_data


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
