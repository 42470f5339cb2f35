"""On PostgreSQL, compress the long texts of references with lz4 instead of the default pglz.

A PubMed record's raw XML (about 5 kB) is compressed on every insert; pglz spends about a third of a large
import's database time on it, lz4 a fraction of that (and reads back faster). Servers built without lz4, and
SQLite, keep their default.
"""

from django.db import migrations

COLUMNS = ("raw", "abstract")


def _lz4_available(schema_editor) -> bool:
    if schema_editor.connection.vendor != "postgresql":
        return False
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    return bool(row and row[0])


def compress_with_lz4(apps, schema_editor):
    if _lz4_available(schema_editor):
        clauses = ", ".join(f"ALTER COLUMN {column} SET COMPRESSION lz4" for column in COLUMNS)
        schema_editor.execute(f"ALTER TABLE literature_reference {clauses}")


def compress_by_default(apps, schema_editor):
    if _lz4_available(schema_editor):
        clauses = ", ".join(f"ALTER COLUMN {column} SET COMPRESSION default" for column in COLUMNS)
        schema_editor.execute(f"ALTER TABLE literature_reference {clauses}")


class Migration(migrations.Migration):
    dependencies = [("literature", "0004_novelty_check")]

    operations = [migrations.RunPython(compress_with_lz4, compress_by_default, elidable=False)]
