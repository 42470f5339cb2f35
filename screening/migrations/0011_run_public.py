from django.db import migrations, models


def public_runs_mark(apps, schema_editor):
    """Runs started on the public page or API are the ones with a client: they stay public; a benchmark set's runs
    (started by a coordinator, no client) no longer are."""
    run_model = apps.get_model("screening", "Run")
    run_model.objects.exclude(client_hash="").update(public=True)


class Migration(migrations.Migration):
    dependencies = [
        ("screening", "0010_path_and_run_judge_roles"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="public",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(public_runs_mark, migrations.RunPython.noop),
    ]
