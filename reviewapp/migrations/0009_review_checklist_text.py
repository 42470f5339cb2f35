"""On PostgreSQL, the function the CSV export's query joins a long flaw checklist with (reviewapp/selectors/exports.py):
the texts of a JSON array's items in order, joined by ";", JSON nulls left out. SQLite's export joins it in Python."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION reviewapp_checklist_text(checklist jsonb) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_to_string(
        ARRAY(SELECT item FROM jsonb_array_elements_text(checklist) WITH ORDINALITY AS items(item, n) ORDER BY n),
        ';'
    )
$$
"""
DROP = "DROP FUNCTION IF EXISTS reviewapp_checklist_text(jsonb)"


def create_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("reviewapp", "0008_background_job_sent_at")]

    operations = [migrations.RunPython(create_function, drop_function, elidable=False)]
