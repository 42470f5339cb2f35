"""Whether reading each reference's raw record gave warnings, set by file imports: a re-import of MEDLINE or RIS then
looks again for the warnings of a stored record only when it had some. Empty for the references already stored (and
for fetched ones), whose warnings are looked for as before."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("literature", "0011_reference_unused_indexes_dropped")]

    operations = [
        migrations.AddField(
            model_name="reference",
            name="raw_warned",
            field=models.BooleanField(
                help_text="whether reading raw gave warnings (a field left out); empty when not told", null=True
            ),
        ),
    ]
