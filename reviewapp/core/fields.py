"""Input fields every room shares.

Integers have the bounds the database and the schema share: a number no column can hold is refused as invalid input
(400) rather than failing in the database, and the schema says so to clients. A list of records is a `RowsField`, so
that a refusal names the row as the error shape does.
"""

from rest_framework import serializers

# Seeds and ids are stored in 64-bit columns (BigIntegerField, BigAutoField).
BIGINT_MAX = 2**63 - 1


class SeedField(serializers.IntegerField):
    """A random seed: any integer a 64-bit column holds, from 0."""

    def __init__(self, **options):
        super().__init__(min_value=0, max_value=BIGINT_MAX, **options)


class IdField(serializers.IntegerField):
    """The id of a stored row."""

    def __init__(self, **options):
        super().__init__(min_value=1, max_value=BIGINT_MAX, **options)


class RowsField(serializers.ListField):
    """A list of records (the rows of an import): a refusal names each row by its number, from 1, and its field, as
    `{"row", "field", "message"}` problems (reviewapp.core.errors.validated)."""
