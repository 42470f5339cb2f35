"""The benchmark records now belong to the benchmarks app (reviewapp/benchmarks/migrations/0001_initial.py); their
tables stay, only the review app's record of them goes."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0002_benchmarkset_benchmarkimport_benchmarktask_and_more"),
        ("benchmarks", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="JudgeScore"),
                migrations.DeleteModel(name="Judge"),
                migrations.DeleteModel(name="RandomControlDraw"),
                migrations.DeleteModel(name="BenchmarkHypothesis"),
                migrations.DeleteModel(name="BenchmarkImport"),
                migrations.RemoveField(model_name="benchmarkset", name="tasks"),
                migrations.DeleteModel(name="BenchmarkTask"),
                migrations.DeleteModel(name="BenchmarkSet"),
            ],
            database_operations=[],
        ),
    ]
