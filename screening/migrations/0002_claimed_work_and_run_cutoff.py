"""Work items take the shared claimed-work fields (reviewapp.core.claims: `claimed_at` is now `started_at`), and a run
records the cutoff of its literature check instead of the check looking it up in a benchmark set."""

from django.db import migrations, models


def copy_benchmark_cutoffs(apps, schema_editor):
    runs = apps.get_model("screening", "Run").objects.using(schema_editor.connection.alias)
    tasks = apps.get_model("benchmarks", "BenchmarkTask").objects.using(schema_editor.connection.alias)
    for run_id, published in tasks.filter(run__isnull=False, task__published__isnull=False).values_list(
        "run_id", "task__published"
    ):
        runs.filter(pk=run_id).update(published_before=published)


class Migration(migrations.Migration):
    dependencies = [
        ("screening", "0001_initial"),
        ("benchmarks", "0001_initial"),
    ]

    operations = [
        migrations.RenameField(model_name="runworkitem", old_name="claimed_at", new_name="started_at"),
        migrations.AlterField(
            model_name="runworkitem",
            name="started_at",
            field=models.DateTimeField(blank=True, help_text="when a worker claimed it", null=True),
        ),
        migrations.AddField(
            model_name="run",
            name="published_before",
            field=models.DateField(blank=True, null=True),
        ),
        migrations.RunPython(copy_benchmark_cutoffs, migrations.RunPython.noop),
    ]
