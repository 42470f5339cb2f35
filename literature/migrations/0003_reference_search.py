"""The full-text search index of the reference corpus (literature.retrieval): on PostgreSQL a tsvector column with a
GIN index, on SQLite an FTS5 table, each with the triggers that mark changed references for re-indexing."""

from django.db import migrations


def install(apps, schema_editor):
    from literature.retrieval import search_index_install

    search_index_install(schema_editor)


def uninstall(apps, schema_editor):
    from literature.retrieval import search_index_uninstall

    search_index_uninstall(schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("literature", "0002_sourceratelimit_sourceresponse_referenceimport"),
    ]

    operations = [migrations.RunPython(install, uninstall)]
