"""The benchmark records move here from the review app: the tables stay as they are (their names are kept), only
Django's record of which app owns them changes. Content types follow, so permissions and admin history keep pointing
at the right models."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MOVED = ['benchmarkset', 'benchmarkimport', 'benchmarktask', 'benchmarkhypothesis', 'judge', 'judgescore', 'randomcontroldraw']


def move_content_types(apps, schema_editor):
    content_types = apps.get_model("contenttypes", "ContentType").objects.using(schema_editor.connection.alias)
    content_types.filter(app_label="reviewapp", model__in=MOVED).update(app_label="benchmarks")


def restore_content_types(apps, schema_editor):
    content_types = apps.get_model("contenttypes", "ContentType").objects.using(schema_editor.connection.alias)
    content_types.filter(app_label="benchmarks", model__in=MOVED).update(app_label="reviewapp")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("reviewapp", "0002_benchmarkset_benchmarkimport_benchmarktask_and_more"),
        ("screening", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="BenchmarkSet",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(max_length=200, unique=True)),
                        ("description", models.TextField(blank=True)),
                        ("seed", models.BigIntegerField()),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, help_text="when the set was first run", null=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "roster",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="benchmark_sets",
                                to="screening.roster",
                            ),
                        ),
                    ],
                ),
                migrations.CreateModel(
                    name="BenchmarkImport",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("filename", models.CharField(max_length=255)),
                        ("file_format", models.CharField(max_length=10)),
                        ("sha256", models.CharField(max_length=64)),
                        ("task_count", models.PositiveIntegerField(default=0)),
                        ("hypothesis_count", models.PositiveIntegerField(default=0)),
                        ("score_count", models.PositiveIntegerField(default=0)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "benchmark",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="imports", to="benchmarks.benchmarkset"
                            ),
                        ),
                    ],
                ),
                migrations.CreateModel(
                    name="BenchmarkTask",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("position", models.PositiveIntegerField()),
                        (
                            "benchmark",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="benchmark_tasks",
                                to="benchmarks.benchmarkset",
                            ),
                        ),
                        (
                            "run",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="benchmark_task",
                                to="screening.run",
                            ),
                        ),
                        (
                            "task",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT, related_name="+", to="reviewapp.researchtask"
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["benchmark", "position", "pk"],
                    },
                ),
                migrations.AddField(
                    model_name="benchmarkset",
                    name="tasks",
                    field=models.ManyToManyField(
                        related_name="benchmark_sets", through="benchmarks.BenchmarkTask", to="reviewapp.researchtask"
                    ),
                ),
                migrations.CreateModel(
                    name="BenchmarkHypothesis",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("key", models.CharField(max_length=200)),
                        ("position", models.PositiveIntegerField(default=0)),
                        ("generator", models.CharField(blank=True, max_length=200)),
                        ("generator_company", models.CharField(blank=True, max_length=200)),
                        ("statement", models.TextField(blank=True)),
                        ("mechanism", models.TextField(blank=True)),
                        ("prediction", models.TextField(blank=True)),
                        ("forecasts", models.JSONField(blank=True, default=dict, help_text="model → true, false or null")),
                        (
                            "first_stage",
                            models.BooleanField(blank=True, help_text="the stage-1 model's yes, when known", null=True),
                        ),
                        ("selected", models.BooleanField(blank=True, null=True)),
                        ("content_sha256", models.CharField(blank=True, max_length=64)),
                        (
                            "hypothesis",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="benchmark_entry",
                                to="screening.hypothesis",
                            ),
                        ),
                        (
                            "import_batch",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to="benchmarks.benchmarkimport",
                            ),
                        ),
                        (
                            "benchmark",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="hypotheses",
                                to="benchmarks.benchmarkset",
                            ),
                        ),
                        (
                            "benchmark_task",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="hypotheses",
                                to="benchmarks.benchmarktask",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["benchmark_task__position", "position", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="Judge",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(max_length=200)),
                        ("company", models.CharField(max_length=200)),
                        ("position", models.PositiveIntegerField()),
                        (
                            "benchmark",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="judges", to="benchmarks.benchmarkset"
                            ),
                        ),
                        (
                            "endpoint",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="screening.modelendpoint",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["benchmark", "position", "pk"],
                    },
                ),
                migrations.CreateModel(
                    name="JudgeScore",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("score", models.PositiveSmallIntegerField()),
                        ("reason", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "hypothesis",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="judge_scores",
                                to="benchmarks.benchmarkhypothesis",
                            ),
                        ),
                        (
                            "import_batch",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to="benchmarks.benchmarkimport",
                            ),
                        ),
                        (
                            "judge",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="scores", to="benchmarks.judge"
                            ),
                        ),
                        (
                            "model_call",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="screening.modelcall",
                            ),
                        ),
                    ],
                ),
                migrations.CreateModel(
                    name="RandomControlDraw",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("drawn_at", models.DateTimeField()),
                        ("hypotheses_sha256", models.CharField(max_length=64)),
                        ("hypothesis_count", models.PositiveIntegerField()),
                        ("answers", models.JSONField()),
                        (
                            "generator",
                            models.CharField(help_text="the cryptographic generator that drew the answers", max_length=50),
                        ),
                        (
                            "benchmark_task",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="random_control",
                                to="benchmarks.benchmarktask",
                            ),
                        ),
                    ],
                ),
                migrations.AddConstraint(
                    model_name="benchmarkimport",
                    constraint=models.UniqueConstraint(fields=("benchmark", "sha256"), name="one_import_per_file_per_set"),
                ),
                migrations.AddConstraint(
                    model_name="benchmarktask",
                    constraint=models.UniqueConstraint(fields=("benchmark", "task"), name="one_benchmark_task_per_task"),
                ),
                migrations.AddConstraint(
                    model_name="benchmarkhypothesis",
                    constraint=models.UniqueConstraint(
                        fields=("benchmark_task", "key"), name="one_benchmark_hypothesis_per_key"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="judge",
                    constraint=models.UniqueConstraint(fields=("benchmark", "name"), name="one_judge_name_per_set"),
                ),
                migrations.AddConstraint(
                    model_name="judgescore",
                    constraint=models.UniqueConstraint(fields=("judge", "hypothesis"), name="one_score_per_judge_hypothesis"),
                ),
                migrations.AddConstraint(
                    model_name="judgescore",
                    constraint=models.CheckConstraint(condition=models.Q(("score__lte", 5)), name="judge_score_in_range"),
                ),
                migrations.AlterModelTable(name="benchmarkset", table="reviewapp_benchmarkset"),
                migrations.AlterModelTable(name="benchmarkimport", table="reviewapp_benchmarkimport"),
                migrations.AlterModelTable(name="benchmarktask", table="reviewapp_benchmarktask"),
                migrations.AlterModelTable(name="benchmarkhypothesis", table="reviewapp_benchmarkhypothesis"),
                migrations.AlterModelTable(name="judge", table="reviewapp_judge"),
                migrations.AlterModelTable(name="judgescore", table="reviewapp_judgescore"),
                migrations.AlterModelTable(name="randomcontroldraw", table="reviewapp_randomcontroldraw"),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, restore_content_types),
    ]
