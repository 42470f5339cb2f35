"""The digest of each reference's raw record (md5 of its UTF-8 bytes), by which a re-import tells the records the
corpus holds byte for byte (literature.importers.pubmed_xml); filled for the references already stored."""

import hashlib

from django.db import migrations, models

BATCH = 2000


def fill_digests(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("UPDATE literature_reference SET raw_md5 = md5(raw)")
        return
    Reference = apps.get_model("literature", "Reference")
    last = 0
    while rows := list(Reference.objects.filter(pk__gt=last).order_by("pk").values_list("pk", "raw")[:BATCH]):
        for pk, raw in rows:
            digest = hashlib.md5(raw.encode(), usedforsecurity=False).hexdigest()
            Reference.objects.filter(pk=pk).update(raw_md5=digest)
        last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [("literature", "0008_claimed_work_sent_at_and_wave_heartbeat")]

    operations = [
        migrations.AddField(
            model_name="reference",
            name="raw_md5",
            field=models.CharField(
                blank=True, help_text="md5 of raw's UTF-8 bytes: tells a re-import", max_length=32
            ),
        ),
        migrations.RunPython(fill_digests, migrations.RunPython.noop, elidable=True),
    ]
