"""One way to page a list answer: `?limit=&offset=` in, `{"count", "limit", "offset", "results"}` out.

A list view's `FilterSerializer` inherits `PageFilter` and sets `paged = True`; the schema (`reviewapp.core.schema`)
then declares its answer as that envelope around the view's `OutputSerializer`, and the view answers with
`page_of(rows, filters)`. `count` is the number of rows before paging, so a client pages until `offset + limit`
reaches it.
"""

from collections.abc import Sequence

from django.db.models import QuerySet
from rest_framework import serializers

from reviewapp.core.errors import validated_query

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# The largest offset anyone can need (and one every database takes as an integer).
MAX_OFFSET = 2**31 - 1


class PageFilter(serializers.Serializer):
    limit = serializers.IntegerField(
        min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT, help_text=f"at most {MAX_LIMIT} rows a page"
    )
    offset = serializers.IntegerField(min_value=0, max_value=MAX_OFFSET, default=0, help_text="rows to skip")


def page_of(rows: Sequence | QuerySet, filters: dict) -> dict:
    """The page that `filters` (validated by a PageFilter) asks for of `rows` (a list or a queryset), with its
    count; the results are the rows themselves, for the view's OutputSerializer to turn into data."""
    limit, offset = filters["limit"], filters["offset"]
    count = rows.count() if isinstance(rows, QuerySet) else len(rows)
    return {"count": count, "limit": limit, "offset": offset, "results": rows[offset : offset + limit]}


def page_data(output, rows: Sequence | QuerySet, query_params, filters: dict | None = None) -> dict:
    """The answer of a list view: the page of `rows` its query asks for (`filters`, when the view validated the query
    itself with its own PageFilter), the results as `output` (a serializer class) writes them."""
    page = page_of(rows, filters if filters is not None else validated_query(PageFilter, query_params))
    return {**page, "results": output(page["results"], many=True).data}


def page_serializer(name: str, item) -> serializers.Serializer:
    """The envelope of a page of `item` (a serializer class) for the schema."""
    return type(
        name,
        (serializers.Serializer,),
        {
            "count": serializers.IntegerField(help_text="rows in all, before paging"),
            "limit": serializers.IntegerField(),
            "offset": serializers.IntegerField(),
            "results": item(many=True),
        },
    )()
