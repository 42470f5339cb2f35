"""Indexes an import writes for every record that no query reads: the PMID's and the DOI's (each with its LIKE
variant; references are found by their source id), and, on PostgreSQL, the NULL search vectors of the references not
indexed yet in the search index (a search's `@@` never matches them; literature_reference_unindexed finds them)."""

from django.db import migrations, models

SEARCH_INDEX = "CREATE INDEX literature_reference_search ON literature_reference USING gin (search_vector)"


def search_index_of_computed_vectors(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS literature_reference_search")
        schema_editor.execute(f"{SEARCH_INDEX} WHERE search_vector IS NOT NULL")


def search_index_of_every_vector(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS literature_reference_search")
        schema_editor.execute(SEARCH_INDEX)


class Migration(migrations.Migration):
    dependencies = [("literature", "0010_reference_raw_digest_index")]

    operations = [
        migrations.AlterField(model_name="reference", name="doi", field=models.CharField(blank=True, max_length=200)),
        migrations.AlterField(model_name="reference", name="pmid", field=models.CharField(blank=True, max_length=20)),
        migrations.RunPython(search_index_of_computed_vectors, search_index_of_every_vector, elidable=False),
    ]
