"""API: benchmark sets, their imports, runs, judges and judging, outcomes, statistics, Table S and the
published-data bundle.

Coordinators and analysts read; only coordinators write. Reviewers get 403 on every route here.
"""

import tempfile

from django.http import FileResponse, HttpResponse
from django.urls import path
from django.utils.http import content_disposition_header
from django.utils.text import slugify
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.analysis import SEEDS
from reviewapp.api.exports import FileContentNegotiation
from reviewapp.api.imports import import_upload
from reviewapp.benchmarks import selectors
from reviewapp.benchmarks.bundle import bundle_zip
from reviewapp.benchmarks.models import BenchmarkSet
from reviewapp.benchmarks.services import sets as services
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.services.judging import judging_start
from reviewapp.benchmarks.statistics import BenchmarkStatistics, statistics_as_dict
from reviewapp.benchmarks.table_s import write_table_s
from reviewapp.core.answers import DataclassAnswerSerializer
from reviewapp.core.errors import validated, validated_query
from reviewapp.core.fields import SeedField
from reviewapp.core.paging import PageFilter, page_data
from reviewapp.core.roles import CanReadAll, IsCoordinator
from reviewapp.core.routing import by_method
from reviewapp.core.schema import file_response
from screening.llm.selectors import endpoint_named, roster_named
from screening.models import Run

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _filename(benchmark: BenchmarkSet, suffix: str) -> str:
    return f"{slugify(benchmark.name) or 'set'}-{benchmark.pk}-{suffix}"


class BenchmarkOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    roster = serializers.CharField(source="roster.name", default=None, allow_null=True)
    design = serializers.CharField()
    forecast_question = serializers.CharField()
    seed = serializers.IntegerField()
    task_count = serializers.IntegerField()
    hypothesis_count = serializers.IntegerField()
    judge_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)


class BenchmarkListApi(APIView):
    permission_classes = [CanReadAll]
    OutputSerializer = BenchmarkOutputSerializer
    FilterSerializer = PageFilter
    paged = True

    def get(self, request):
        rows = selectors.benchmark_list_with_rosters()
        return Response(page_data(BenchmarkOutputSerializer, rows, request.query_params))


class BenchmarkCreateApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        roster = serializers.CharField(required=False, allow_blank=True, default="", help_text="a roster's name")
        seed = SeedField(required=False, allow_null=True, default=None)
        design = serializers.ChoiceField(choices=BenchmarkSet.Design.values, default=BenchmarkSet.Design.POOLED)
        forecast_question = serializers.ChoiceField(choices=Run.Question.values, default=Run.Question.SHORT)

    OutputSerializer = BenchmarkOutputSerializer
    success_status = 201
    error_codes = {
        400: ("unknown_roster", "invalid_question", "invalid_design", "invalid_request"),
        409: ("name_taken",),
    }

    def post(self, request):
        values = validated(self.InputSerializer, request.data)
        roster = roster_named(values["roster"])
        benchmark = services.benchmark_create(
            name=values["name"],
            description=values["description"],
            roster=roster,
            seed=values["seed"],
            design=values["design"],
            forecast_question=values["forecast_question"],
            user=request.user,
        )

        return Response(
            BenchmarkOutputSerializer(selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark.pk)).data,
            status=status.HTTP_201_CREATED,
        )


class BenchmarkDetailApi(APIView):
    """The set with its progress: per task, its run's status and counts and the random control's time."""

    permission_classes = [CanReadAll]

    class OutputSerializer(BenchmarkOutputSerializer):
        class Progress(serializers.Serializer):
            runs = serializers.IntegerField()
            finished_runs = serializers.IntegerField()
            runs_by_status = serializers.DictField(child=serializers.IntegerField())
            hypotheses = serializers.IntegerField()
            selected = serializers.IntegerField()
            scores = serializers.IntegerField()

        class Task(serializers.Serializer):
            task = serializers.CharField()
            status = serializers.CharField()
            run = serializers.CharField(allow_null=True, help_text="the run's public id")
            hypotheses = serializers.IntegerField()
            discarded = serializers.IntegerField()
            kept = serializers.IntegerField()
            selected = serializers.IntegerField()
            scores = serializers.IntegerField()
            random_control_drawn_at = serializers.DateTimeField(allow_null=True)
            pool_frozen_at = serializers.DateTimeField(
                allow_null=True, help_text="when the run's pool was shuffled and numbered"
            )
            first_forecast_at = serializers.DateTimeField(allow_null=True)
            repeated_requests = serializers.IntegerField(help_text="forecast requests asked again (round 2)")
            repeated_requests_finished = serializers.IntegerField()

        progress = Progress()
        tasks = Task(many=True)

    def get(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        progress = selectors.benchmark_progress(benchmark)
        return Response(
            {
                **BenchmarkOutputSerializer(benchmark).data,
                "progress": {
                    "runs": progress.runs,
                    "finished_runs": progress.finished_runs,
                    "runs_by_status": progress.runs_by_status,
                    "hypotheses": progress.hypotheses,
                    "selected": progress.selected,
                    "scores": progress.scores,
                },
                "tasks": [
                    {
                        "task": row.task_key,
                        "status": row.status,
                        "run": str(row.run.public_id) if row.run else None,
                        "hypotheses": row.hypotheses,
                        "discarded": row.discarded,
                        "kept": row.kept,
                        "selected": row.selected,
                        "scores": row.scores,
                        "random_control_drawn_at": row.control_drawn_at,
                        "pool_frozen_at": row.pool_frozen_at,
                        "first_forecast_at": row.first_forecast_at,
                        "repeated_requests": row.repeat_requests,
                        "repeated_requests_finished": row.repeat_finished,
                    }
                    for row in progress.tasks
                ],
            }
        )


class BenchmarkImportApi(APIView):
    body_limit_setting = "OH_MAX_IMPORT_BYTES"  # reviewapp.core.requests
    """POST a JSON, CSV or XLSX file of tasks, hypotheses with forecasts and/or judge scores as multipart "file"."""

    permission_classes = [IsCoordinator]
    parser_classes = [MultiPartParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(allow_empty_file=True)

    class OutputSerializer(serializers.Serializer):
        tasks = serializers.IntegerField()
        hypotheses = serializers.IntegerField()
        scores = serializers.IntegerField()
        new_tasks = serializers.IntegerField()
        new_hypotheses = serializers.IntegerField()
        new_scores = serializers.IntegerField()
        new_judges = serializers.IntegerField()
        already_imported = serializers.BooleanField()
        analysis_records = serializers.IntegerField()
        new_analysis_records = serializers.IntegerField()

    error_codes = {400: ("invalid_import",)}

    def post(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        upload = import_upload(request.data)
        result = benchmark_import_file(
            benchmark=benchmark, filename=upload.name, content=upload.read(), user=request.user
        )

        return Response(self.OutputSerializer(result).data)


class BenchmarkRunApi(APIView):
    """Start one screening run per task that has none (the set's roster, seeds derived from the set's seed)."""

    permission_classes = [IsCoordinator]

    class OutputSerializer(serializers.Serializer):
        class Started(serializers.Serializer):
            id = serializers.CharField(help_text="the run's public id")
            shuffle_seed = serializers.IntegerField()

        started = Started(many=True)

    success_status = 202
    error_codes = {400: ("no_roster", "roster_incomplete"), 409: ("nothing_to_run",), 503: ("queue_unavailable",)}

    @extend_schema(request=None)
    def post(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        runs = services.benchmark_run(benchmark=benchmark)

        started = [{"id": str(run.public_id), "shuffle_seed": run.shuffle_seed} for run in runs]
        return Response({"started": started}, status=status.HTTP_202_ACCEPTED)


class ForecastMatrixApi(APIView):
    """Every hypothesis with each forecasting model's answer and the model call that gave it (?round=2: the same
    requests asked again)."""

    permission_classes = [CanReadAll]
    paged = True

    class FilterSerializer(PageFilter):
        round = serializers.ChoiceField(choices=[1, 2], default=1)

    class OutputSerializer(serializers.Serializer):
        hypothesis = serializers.CharField(help_text="the hypothesis's key in the set")
        generator = serializers.CharField()
        task = serializers.CharField(help_text="the research task's key")
        forecasts = serializers.DictField(
            child=serializers.BooleanField(allow_null=True), help_text="model → true, false or null (no usable answer)"
        )
        requests = serializers.DictField(
            child=serializers.IntegerField(allow_null=True), help_text="model → id of the model call that answered"
        )

    def get(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        values = validated_query(self.FilterSerializer, request.query_params)
        matrix = selectors.benchmark_forecast_matrix(benchmark, round_=values["round"])
        return Response(page_data(self.OutputSerializer, matrix, request.query_params, filters=values))


class ForecastsRepeatApi(APIView):
    """Ask every forecast request of the set's finished runs again, as it was (round 2)."""

    permission_classes = [IsCoordinator]
    success_status = 202
    error_codes = {409: ("nothing_to_repeat", "forecasts_not_done", "already_repeated"), 503: ("queue_unavailable",)}

    class OutputSerializer(serializers.Serializer):
        class TaskSerializer(serializers.Serializer):
            task = serializers.CharField(help_text="the research task's key")
            requests = serializers.IntegerField(help_text="forecast requests sent again")

        round = serializers.IntegerField()
        tasks = TaskSerializer(many=True)

    @extend_schema(request=None)
    def post(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        queued = services.benchmark_forecasts_repeat(benchmark=benchmark)
        answer = {"round": 2, "tasks": [{"task": task, "requests": count} for task, count in queued]}
        return Response(self.OutputSerializer(answer).data, status=status.HTTP_202_ACCEPTED)


class JudgeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    company = serializers.CharField()
    position = serializers.IntegerField()
    model = serializers.CharField(source="endpoint.model_id", default=None, allow_null=True)


class JudgeListApi(APIView):
    permission_classes = [CanReadAll]
    OutputSerializer = JudgeSerializer
    FilterSerializer = PageFilter
    paged = True

    def get(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        return Response(page_data(JudgeSerializer, selectors.benchmark_judges(benchmark), request.query_params))


class JudgeAddApi(APIView):
    """Add a judge: a model endpoint (by its display name) or a person (name and company)."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
        company = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
        endpoint = serializers.CharField(required=False, allow_blank=True, default="")

    OutputSerializer = JudgeSerializer
    success_status = 201
    error_codes = {400: ("unknown_endpoint", "invalid_request"), 409: ("judge_exists",)}

    def post(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        values = validated(self.InputSerializer, request.data)
        endpoint = endpoint_named(values["endpoint"])
        judge = services.judge_add(
            benchmark=benchmark, name=values["name"], company=values["company"], endpoint=endpoint
        )

        return Response(JudgeSerializer(judge).data, status=status.HTTP_201_CREATED)


class JudgingStartApi(APIView):
    """Start the judging: one background job per model judge ({"judges": [names]} to choose some)."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        judges = serializers.ListField(child=serializers.CharField(), required=False, allow_empty=False, min_length=1)

    class OutputSerializer(serializers.Serializer):
        class Job(serializers.Serializer):
            id = serializers.IntegerField()
            judge_id = serializers.IntegerField()
            state = serializers.CharField()

        jobs = Job(many=True)

    success_status = 202
    error_codes = {400: ("no_judges", "nothing_to_judge", "unknown_judge"), 503: ("queue_unavailable",)}

    def post(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        data = validated(self.InputSerializer, request.data)
        judges = None
        if "judges" in data:
            judges = selectors.benchmark_judges_named(benchmark, data["judges"])
        jobs = judging_start(benchmark=benchmark, user=request.user, judges=judges)

        return Response(
            {"jobs": [{"id": job.pk, "judge_id": job.params["judge_id"], "state": job.state} for job in jobs]},
            status=status.HTTP_202_ACCEPTED,
        )


class OutcomesApi(APIView):
    """The judge table: every hypothesis with each judge's score (listed order) and its outcome."""

    permission_classes = [CanReadAll]

    class OutputSerializer(serializers.Serializer):
        class JudgeName(serializers.Serializer):
            name = serializers.CharField()
            company = serializers.CharField()

        class Row(serializers.Serializer):
            task = serializers.CharField()
            id = serializers.CharField()
            generator = serializers.CharField()
            generator_company = serializers.CharField()
            selected = serializers.BooleanField(allow_null=True)
            scores = serializers.DictField(
                child=serializers.IntegerField(allow_null=True), help_text="judge name → score 0–5"
            )
            excluded_judges = serializers.ListField(child=serializers.CharField())
            outcome = serializers.CharField(help_text="positive, negative or not_judged")
            primary = serializers.BooleanField(allow_null=True)
            strict = serializers.BooleanField(allow_null=True)
            borderline = serializers.BooleanField(allow_null=True)
            note = serializers.CharField()

        judges = JudgeName(many=True)
        hypotheses = Row(many=True)

    def get(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        judges = selectors.benchmark_judges(benchmark)
        rows = selectors.benchmark_rows(benchmark, judges)
        return Response(
            {
                "judges": [{"name": judge.name, "company": judge.company} for judge in judges],
                "hypotheses": [
                    {
                        "task": row.task_key,
                        "id": row.key,
                        "generator": row.generator,
                        "generator_company": row.generator_company,
                        "selected": row.selected,
                        "scores": row.scores,
                        "excluded_judges": list(row.excluded_judges),
                        "outcome": row.status,
                        "primary": row.primary,
                        "strict": row.strict,
                        "borderline": row.borderline,
                        "note": row.outcome_note,
                    }
                    for row in rows
                ],
            }
        )


SEED_PARAMETERS = {f"seed_{family}": family for family in SEEDS}


def statistics_seeds(query) -> dict[str, int]:
    """The seed of each family of analyses from a query (``seed_generation``, ``seed_selection``,
    ``seed_sensitivity``, ``seed_auc``, ``seed_further``), the benchmark's own where none is given
    (docs/analysis.md#seeds). Raises InputInvalid for a seed that is not a whole number from 0 to 2^32 − 1."""
    values = validated(StatisticsApi.FilterSerializer, {key: query[key] for key in SEED_PARAMETERS if query.get(key)})
    return {**SEEDS, **{SEED_PARAMETERS[key]: value for key, value in values.items() if value is not None}}


class StatisticsApi(APIView):
    """The set's statistics (docs/protocol.md#statistics and docs/analysis.md#the-appendices-analyses) as JSON, the
    same the statistics page shows; ``?seed_<family>=`` changes a family's seed."""

    permission_classes = [CanReadAll]

    class FilterSerializer(serializers.Serializer):
        seed_generation = serializers.IntegerField(required=False, min_value=0, max_value=2**32 - 1)
        seed_selection = serializers.IntegerField(required=False, min_value=0, max_value=2**32 - 1)
        seed_sensitivity = serializers.IntegerField(required=False, min_value=0, max_value=2**32 - 1)
        seed_auc = serializers.IntegerField(required=False, min_value=0, max_value=2**32 - 1)
        seed_further = serializers.IntegerField(required=False, min_value=0, max_value=2**32 - 1)

    # Typed from the annotations of BenchmarkStatistics and every dataclass it nests (reviewapp.core.answers). To add
    # a section to the statistics, add a field to BenchmarkStatistics (or to StudyStatistics) whose type is a frozen
    # dataclass, a tuple of them or ``X | None``, each of its fields annotated with its real type: the schema
    # follows with no edit here, and tests/test_api_typed_answers.py checks the demo set's answer against it.
    class OutputSerializer(DataclassAnswerSerializer):
        """The statistics of a benchmark set (docs/analysis.md); null where a statistic is undefined."""

        class Meta:
            dataclass = BenchmarkStatistics

    @extend_schema(
        responses=OpenApiResponse(
            OutputSerializer,
            description="The statistics (docs/analysis.md): `generators` per generator and all together (selection "
            "summaries with estimates and intervals, random list, drawn control, single-model lists), the judges' "
            "votes and agreement, and `study`, the other analyses of the appendices "
            "(docs/analysis.md#the-appendices-analyses), each with the seed it used; null where a statistic is "
            "undefined.",
        )
    )
    def get(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        seeds = statistics_seeds(request.query_params)
        return Response(statistics_as_dict(selectors.benchmark_statistics(benchmark, seeds=seeds)))


class TableSApi(APIView):
    permission_classes = [CanReadAll]
    content_negotiation_class = FileContentNegotiation

    @extend_schema(responses=file_response(XLSX, "The Table S workbook of the set."))
    def get(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        # An anonymous temporary file: removed when the response closes it, however the download ends.
        workbook_file = tempfile.TemporaryFile(suffix=".xlsx")
        try:
            write_table_s(benchmark, workbook_file)
        except BaseException:
            workbook_file.close()
            raise
        workbook_file.seek(0)
        return FileResponse(
            workbook_file, as_attachment=True, filename=_filename(benchmark, "table-s.xlsx"), content_type=XLSX
        )


class BundleApi(APIView):
    permission_classes = [CanReadAll]
    content_negotiation_class = FileContentNegotiation

    @extend_schema(responses=file_response("application/zip", "The published-data bundle: tables and a README."))
    def get(self, request, benchmark_id: int):
        benchmark = selectors.benchmark_for_user(user=request.user, benchmark_id=benchmark_id)
        response = HttpResponse(bundle_zip(benchmark), content_type="application/zip")
        response["Content-Disposition"] = content_disposition_header(True, _filename(benchmark, "bundle.zip"))
        return response


urlpatterns = [
    path("benchmarks", by_method(get=BenchmarkListApi, post=BenchmarkCreateApi), name="api-benchmarks"),
    path("benchmarks/<int:benchmark_id>", BenchmarkDetailApi.as_view(), name="api-benchmark-detail"),
    path("benchmarks/<int:benchmark_id>/import", BenchmarkImportApi.as_view(), name="api-benchmark-import"),
    path("benchmarks/<int:benchmark_id>/run", BenchmarkRunApi.as_view(), name="api-benchmark-run"),
    path("benchmarks/<int:benchmark_id>/forecasts", ForecastMatrixApi.as_view(), name="api-benchmark-forecasts"),
    path(
        "benchmarks/<int:benchmark_id>/forecasts/repeat",
        ForecastsRepeatApi.as_view(),
        name="api-benchmark-forecasts-repeat",
    ),
    path(
        "benchmarks/<int:benchmark_id>/judges",
        by_method(get=JudgeListApi, post=JudgeAddApi),
        name="api-benchmark-judges",
    ),
    path("benchmarks/<int:benchmark_id>/judging", JudgingStartApi.as_view(), name="api-benchmark-judging"),
    path("benchmarks/<int:benchmark_id>/outcomes", OutcomesApi.as_view(), name="api-benchmark-outcomes"),
    path("benchmarks/<int:benchmark_id>/statistics", StatisticsApi.as_view(), name="api-benchmark-statistics"),
    path("benchmarks/<int:benchmark_id>/table-s.xlsx", TableSApi.as_view(), name="api-benchmark-table-s"),
    path("benchmarks/<int:benchmark_id>/bundle.zip", BundleApi.as_view(), name="api-benchmark-bundle"),
]
