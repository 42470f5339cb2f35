"""API of the AI review panel: start and read a cohort's panel, pairwise critique (run, import, read), ratings, the
calibration against the human reviews, the prompts, and the panel of hypotheses selected from screening runs and
benchmark sets.

Coordinators and analysts read; only coordinators start work or add comparisons. Reviewers get 403 on every route
here (and nothing of the panel appears anywhere a reviewer can go).
"""

from django.urls import path, reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.benchmarks.selectors import benchmark_for_user
from reviewapp.core.errors import NotFound, validated
from reviewapp.core.fields import IdField, RowsField
from reviewapp.core.roles import CanReadAll, IsCoordinator
from reviewapp.core.routing import by_method
from reviewapp.models import BackgroundJob, Cohort
from reviewapp.panel import profile as rules
from reviewapp.panel import ratings as trueskill_rules
from reviewapp.panel import selectors
from reviewapp.panel.calibration import CLOSEST_CRITERION
from reviewapp.panel.level_prompts import LEVEL_PROMPTS
from reviewapp.panel.prompts import PROMPT_VERSION, PROMPTS
from reviewapp.panel.services import critique, panel
from reviewapp.panel.services.critique import MAX_PER_PROPOSAL
from reviewapp.selectors.cohorts import cohort_for_user
from screening.selectors import run_get

# Imported comparisons per request; larger logs go in several requests, applied in order.
MAX_IMPORTED_COMPARISONS = 50_000


def job_answer(job: BackgroundJob) -> Response:
    """202 with the job, its state and the page that follows it."""
    return Response(
        {"job": job.pk, "state": job.state, "url": reverse("job-detail", args=[job.pk])},
        status=status.HTTP_202_ACCEPTED,
    )


class JobStartedSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    state = serializers.CharField()
    url = serializers.CharField(help_text="the job's page")


# Starting a job: the panel's own refusals, and the broker's.
JOB_ERRORS = {
    400: ("invalid_panel_request", "nothing_to_review"),
    409: ("panel_running", "critique_running"),
    503: ("not_configured", "queue_unavailable"),
}


def _eligible(value: str):
    return {"true": True, "false": False, rules.UNKNOWN: rules.UNKNOWN}.get(value)


def review_as_dict(review: selectors.ReviewRow) -> dict:
    return {
        "role": review.role,
        "state": review.state,
        "eligible": _eligible(review.eligible),
        "scores": review.scores,
        "rationale": review.rationale,
        "simulated": review.simulated,
        "model": review.model_name,
        "prompt_version": review.prompt_version,
        "error": review.error,
    }


def profile_as_dict(profile: rules.Profile) -> dict:
    coverage = profile.coverage
    return {
        "medians": profile.medians,
        "q": profile.q,
        "complete": profile.panel_complete,
        "coverage": {
            "reviews": coverage.reviews,
            "failed_roles": list(coverage.failed_roles),
            "eligible_votes": coverage.eligible_votes,
            "medians_known": coverage.medians_known,
            "inapplicable": list(coverage.inapplicable),
        },
    }


def revision_as_dict(revision: selectors.RevisionRow | None) -> dict | None:
    if revision is None:
        return None
    return {
        "predecessor": revision.predecessor_id,
        "state": revision.state or "not_judged",
        "category": revision.category or None,
        "rationale": revision.rationale,
        "delta_q": revision.delta_q,
    }


DIMENSIONS = [{"key": dimension.key, "weight": dimension.weight} for dimension in rules.DIMENSIONS]


@extend_schema_field({"oneOf": [{"type": "boolean"}, {"type": "string", "enum": [rules.UNKNOWN]}], "nullable": True})
class EligibleField(serializers.Field):
    """true, false or "unknown"; null for a review that failed."""

    def to_representation(self, value):
        return value


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": rules.LOWEST, "maximum": rules.HIGHEST},
            {"type": "string", "enum": list(rules.SCORE_WORDS)},
        ]
    }
)
class ScoreField(serializers.Field):
    """A score from 1 to 10, or "unknown" or "inapplicable"."""

    def to_representation(self, value):
        return value


class DimensionSerializer(serializers.Serializer):
    key = serializers.CharField()
    weight = serializers.IntegerField(help_text="its weight in Q; the weights sum to 100")


class PanelReviewSerializer(serializers.Serializer):
    role = serializers.CharField()
    state = serializers.CharField()
    eligible = EligibleField()
    scores = serializers.DictField(child=ScoreField(), help_text="dimension → score; empty for a failed review")
    rationale = serializers.CharField()
    simulated = serializers.BooleanField()
    model = serializers.CharField()
    prompt_version = serializers.CharField()
    error = serializers.CharField()


class CoverageSerializer(serializers.Serializer):
    reviews = serializers.IntegerField(help_text="roles whose review succeeded")
    failed_roles = serializers.ListField(child=serializers.CharField())
    eligible_votes = serializers.IntegerField()
    medians_known = serializers.IntegerField()
    inapplicable = serializers.ListField(
        child=serializers.CharField(), help_text="dimensions most reviewers called inapplicable"
    )


class RevisionSerializer(serializers.Serializer):
    predecessor = serializers.CharField(help_text="the revised proposal's id")
    state = serializers.CharField(help_text="done, failed or not_judged")
    category = serializers.CharField(allow_null=True, help_text="null until judged")
    rationale = serializers.CharField()
    delta_q = serializers.FloatField(allow_null=True, help_text="Q of this proposal minus its predecessor's")


class ProfileSerializer(serializers.Serializer):
    """A reviewed hypothesis's profile (docs/protocol.md): its reviews, medians, Q and coverage."""

    reviews = PanelReviewSerializer(many=True)
    medians = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text="dimension → median; null with fewer than two scores"
    )
    q = serializers.FloatField(allow_null=True, help_text="null unless every median exists")
    complete = serializers.BooleanField(help_text="all three roles reviewed")
    coverage = CoverageSerializer()
    revision = RevisionSerializer(allow_null=True, help_text="a revised proposal's revision judgment")


class PanelProposalSerializer(ProfileSerializer):
    id = serializers.CharField(help_text="the proposal's id")
    task = serializers.CharField()


class RevisionsSerializer(serializers.Serializer):
    judged = serializers.IntegerField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="revision category → judgments")
    substantive_progress_rate = serializers.FloatField(allow_null=True)
    useful_step_rate = serializers.FloatField(allow_null=True)
    repetition_rate = serializers.FloatField(allow_null=True)
    insufficient_evidence_rate = serializers.FloatField(allow_null=True)
    delta_q_pairs = serializers.IntegerField()
    mean_delta_q = serializers.FloatField(allow_null=True)


class CohortPanelSerializer(serializers.Serializer):
    state = serializers.CharField(help_text="the latest panel job's state, or not_started")
    job = serializers.IntegerField(allow_null=True)
    prompt_version = serializers.CharField()
    simulated = serializers.BooleanField()
    dimensions = DimensionSerializer(many=True)
    proposals = PanelProposalSerializer(many=True)
    revisions = RevisionsSerializer()


class CohortPanelStartApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        redo = serializers.BooleanField(default=False)

    OutputSerializer = JobStartedSerializer
    success_status = 202
    error_codes = JOB_ERRORS

    def post(self, request, cohort_id: int):
        values = validated(self.InputSerializer, request.data)
        return job_answer(
            panel.panel_start_for_cohort(
                cohort=cohort_for_user(user=request.user, cohort_id=cohort_id), redo=values["redo"], user=request.user
            )
        )


class CohortPanelApi(APIView):
    permission_classes = [CanReadAll]

    OutputSerializer = CohortPanelSerializer

    def get(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        result = selectors.cohort_panel(cohort, with_rationale=True)
        job = selectors.latest_job(cohort, selectors.PANEL_JOB)
        summary = result.revisions
        return Response(
            {
                "state": job.state if job else "not_started",
                "job": job.pk if job else None,
                "prompt_version": PROMPT_VERSION,
                "simulated": result.simulated,
                "dimensions": DIMENSIONS,
                "proposals": [
                    {
                        "id": row.proposal_id,
                        "task": row.task_key,
                        "reviews": [review_as_dict(review) for review in row.reviews],
                        **profile_as_dict(row.profile),
                        "revision": revision_as_dict(row.revision),
                    }
                    for row in result.rows
                ],
                "revisions": {
                    "judged": summary.judged,
                    "counts": summary.counts,
                    "substantive_progress_rate": summary.substantive_progress_rate,
                    "useful_step_rate": summary.useful_step_rate,
                    "repetition_rate": summary.repetition_rate,
                    "insufficient_evidence_rate": summary.insufficient_evidence_rate,
                    "delta_q_pairs": summary.delta_q_pairs,
                    "mean_delta_q": summary.mean_delta_q,
                },
            }
        )


class ComparisonsRunApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        per_proposal = serializers.IntegerField(min_value=1, max_value=MAX_PER_PROPOSAL)
        seed = serializers.IntegerField(min_value=-(2**63), max_value=2**63 - 1)
        repeat = serializers.BooleanField(default=False)

    OutputSerializer = JobStartedSerializer
    success_status = 202
    error_codes = {**JOB_ERRORS, 400: ("invalid_panel_request", "invalid_budget")}

    def post(self, request, cohort_id: int):
        values = validated(self.InputSerializer, request.data)
        return job_answer(
            critique.critique_start(
                cohort=cohort_for_user(user=request.user, cohort_id=cohort_id), **values, user=request.user
            )
        )


class ComparisonsImportApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        class Row(serializers.Serializer):
            a = serializers.CharField(max_length=200)
            b = serializers.CharField(max_length=200)
            outcome = serializers.ChoiceField(choices=trueskill_rules.OUTCOMES)

        comparisons = RowsField(child=Row(), allow_empty=False, min_length=1, max_length=MAX_IMPORTED_COMPARISONS)

    class OutputSerializer(serializers.Serializer):
        created = serializers.IntegerField()
        first_seq = serializers.IntegerField()
        last_seq = serializers.IntegerField()

    success_status = 201
    error_codes = {400: ("invalid_comparisons",)}

    def post(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        values = validated(self.InputSerializer, request.data)
        stored = critique.comparisons_import(cohort=cohort, rows=values["comparisons"], user=request.user)
        return Response(
            {"created": len(stored), "first_seq": stored[0].seq, "last_seq": stored[-1].seq},
            status=status.HTTP_201_CREATED,
        )


class ComparisonsListApi(APIView):
    permission_classes = [CanReadAll]

    class OutputSerializer(serializers.Serializer):
        class Comparison(serializers.Serializer):
            seq = serializers.IntegerField()
            a = serializers.CharField()
            b = serializers.CharField()
            outcome = serializers.ChoiceField(choices=trueskill_rules.OUTCOMES)
            source = serializers.CharField()
            shown_first = serializers.CharField(allow_null=True)
            order_seed = serializers.IntegerField(allow_null=True)
            simulated = serializers.BooleanField()

        comparisons = Comparison(many=True, help_text="in update order")

    def get(self, request, cohort_id: int):
        log = selectors.comparison_log(cohort_for_user(user=request.user, cohort_id=cohort_id))
        return Response(
            {
                "comparisons": [
                    {
                        "seq": row["seq"],
                        "a": row["a__external_id"],
                        "b": row["b__external_id"],
                        "outcome": row["outcome"],
                        "source": row["source"],
                        "shown_first": (
                            None
                            if row["shown_first_id"] is None
                            else row["a__external_id"]
                            if row["shown_first_id"] == row["a_id"]
                            else row["b__external_id"]
                        ),
                        "order_seed": row["order_seed"],
                        "simulated": row["simulated"],
                    }
                    for row in log.iterator(chunk_size=5000)
                ]
            }
        )


def ratings_as_dict(cohort: Cohort) -> dict:
    ratings = selectors.cohort_ratings(cohort)
    members = selectors.cohort_proposal_keys(cohort)
    rows = sorted(ratings.by_proposal.items(), key=lambda item: (members[item[0]][1], members[item[0]][0]))
    return {
        "parameters": trueskill_rules.parameters(),
        "ratings": [
            {
                "proposal": members[pk][0],
                "task": members[pk][1],
                "mu": rating.mu,
                "sigma": rating.sigma,
                "conservative": rating.conservative,
                "rank": rating.rank,
                "comparisons": rating.comparisons,
            }
            for pk, rating in rows
        ],
    }


class RatingsSerializer(serializers.Serializer):
    class Rating(serializers.Serializer):
        proposal = serializers.CharField()
        task = serializers.CharField()
        mu = serializers.FloatField()
        sigma = serializers.FloatField()
        conservative = serializers.FloatField(help_text="s = μ − 2σ")
        rank = serializers.FloatField(
            allow_null=True,
            help_text="tie-aware rank among the compared proposals of the task, 0–1 (1 the best); null when never "
            "compared",
        )
        comparisons = serializers.IntegerField()

    class Parameters(serializers.Serializer):
        """The TrueSkill parameters (docs/protocol.md)."""

        mu = serializers.FloatField()
        sigma = serializers.FloatField()
        beta = serializers.FloatField()
        tau = serializers.FloatField()
        draw_probability = serializers.FloatField()
        kappa = serializers.FloatField(help_text="s = μ − κσ")

    parameters = Parameters()
    ratings = Rating(many=True)


class RatingsApi(APIView):
    permission_classes = [CanReadAll]
    OutputSerializer = RatingsSerializer

    def get(self, request, cohort_id: int):
        return Response(ratings_as_dict(cohort_for_user(user=request.user, cohort_id=cohort_id)))


class RatingsRecomputeApi(APIView):
    permission_classes = [IsCoordinator]

    class OutputSerializer(RatingsSerializer):
        replayed = serializers.IntegerField(help_text="comparisons replayed from the log")

    error_codes = {409: ("critique_running",)}

    @extend_schema(request=None)
    def post(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        replayed = critique.ratings_recompute(cohort=cohort)
        return Response({"replayed": replayed, **ratings_as_dict(cohort)})


def calibration_as_dict(result) -> dict:
    return {
        "proposals": result.proposals,
        "tasks": result.tasks,
        "resamples": result.resamples,
        "seed": result.seed,
        "q_vs_overall": result.q_vs_overall.as_dict(),
        "dimensions": {
            dimension: {"criterion": CLOSEST_CRITERION[dimension], **figure.as_dict()}
            for dimension, figure in result.dimensions.items()
        },
        "s_vs_overall_within_tasks": result.s_vs_overall_within_tasks.as_dict(),
        "reject_share": {
            "top_quarter": result.reject_top_quarter.as_dict(),
            "bottom_quarter": result.reject_bottom_quarter.as_dict(),
        },
    }


class CalibrationFigureSerializer(serializers.Serializer):
    estimate = serializers.FloatField(
        allow_null=True, help_text="null when undefined (fewer than two pairs, a constant side)"
    )
    low = serializers.FloatField(allow_null=True, help_text="95% percentile interval over whole-task resamples")
    high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField(help_text="proposals in the computation")
    undefined_resamples = serializers.IntegerField()


class DimensionFigureSerializer(CalibrationFigureSerializer):
    criterion = serializers.CharField(help_text="the closest human criterion")


class WithinTasksFigureSerializer(CalibrationFigureSerializer):
    tasks = serializers.IntegerField(help_text="tasks with enough proposals")


class RejectShareFigureSerializer(CalibrationFigureSerializer):
    reviews = serializers.IntegerField()
    rejects = serializers.IntegerField()
    cut = serializers.FloatField(allow_null=True, help_text="the quarter's Q cut; null without proposals")


class RejectSharesSerializer(serializers.Serializer):
    top_quarter = RejectShareFigureSerializer()
    bottom_quarter = RejectShareFigureSerializer()


class ReferenceDiagnosticsSerializer(serializers.Serializer):
    """The calibration answer's `reference`: development diagnostics of each role against the fresh-context
    reference (docs/protocol.md#fresh-context-references), apart from the human calibration."""

    class Role(serializers.Serializer):
        class AbsoluteDifference(CalibrationFigureSerializer):
            pairs = serializers.IntegerField(source="extra.pairs", help_text="(proposal, dimension) pairs compared")

        role = serializers.CharField()
        reviews = serializers.IntegerField(help_text="proposals with both this role's and the reference's review")
        weighted = CalibrationFigureSerializer(help_text="Spearman's ρ of the two weighted scores (weights of Q)")
        dimensions = serializers.DictField(
            child=CalibrationFigureSerializer(), help_text="per dimension: Spearman's ρ of the two scores"
        )
        absolute_difference = AbsoluteDifference(help_text="mean |role − reference| on the 1–10 scale")

    configured = serializers.BooleanField(help_text="the default roster names a reference reviewer")
    models = serializers.ListField(child=serializers.CharField(), help_text="the models that gave reference reviews")
    simulated = serializers.BooleanField()
    reviewed = serializers.IntegerField(help_text="proposals with a valid reference review")
    failed = serializers.IntegerField(help_text="proposals whose reference review failed")
    tasks = serializers.IntegerField(source="result.tasks")
    resamples = serializers.IntegerField(source="result.resamples")
    seed = serializers.IntegerField(source="result.seed")
    roles = Role(many=True)


class CalibrationApi(APIView):
    permission_classes = [CanReadAll]

    class OutputSerializer(serializers.Serializer):
        """The panel against the human reviews (docs/protocol.md#calibration), and apart from it each role against
        the fresh-context reference."""

        proposals = serializers.IntegerField()
        tasks = serializers.IntegerField()
        resamples = serializers.IntegerField()
        seed = serializers.IntegerField()
        q_vs_overall = CalibrationFigureSerializer()
        dimensions = serializers.DictField(child=DimensionFigureSerializer(), help_text="AI dimension → its figure")
        s_vs_overall_within_tasks = WithinTasksFigureSerializer()
        reject_share = RejectSharesSerializer()
        reference = ReferenceDiagnosticsSerializer()

    def get(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        return Response(
            {
                **calibration_as_dict(selectors.cohort_calibration(cohort)),
                "reference": ReferenceDiagnosticsSerializer(selectors.cohort_reference_diagnostics(cohort)).data,
            }
        )


class PromptsApi(APIView):
    permission_classes = [CanReadAll]

    class OutputSerializer(serializers.Serializer):
        class Prompt(serializers.Serializer):
            kind = serializers.CharField()
            version = serializers.CharField()
            system = serializers.CharField()
            template = serializers.CharField()
            sha256 = serializers.CharField()
            current = serializers.BooleanField()

        version = serializers.CharField()
        prompts = Prompt(many=True)

    def get(self, request):
        current = {text.sha256 for text in (*PROMPTS.values(), *LEVEL_PROMPTS.values())}
        return Response(
            {
                "version": PROMPT_VERSION,
                "prompts": [
                    {
                        "kind": prompt.kind,
                        "version": prompt.version,
                        "system": prompt.system,
                        "template": prompt.template,
                        "sha256": prompt.sha256,
                        "current": prompt.sha256 in current,
                    }
                    for prompt in selectors.prompt_versions()
                ],
            }
        )


class HypothesesPanelStartApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        run = serializers.UUIDField(required=False)
        benchmark = IdField(required=False)
        hypotheses = serializers.ListField(
            child=serializers.CharField(max_length=200), allow_empty=False, min_length=1, max_length=10_000
        )
        redo = serializers.BooleanField(default=False)

        def validate(self, attrs):
            if ("run" in attrs) == ("benchmark" in attrs):
                raise serializers.ValidationError("Name either a screening run or a benchmark set.")
            return attrs

    OutputSerializer = JobStartedSerializer
    success_status = 202
    # 404: the run or benchmark set the body names does not exist.
    error_codes = {
        **JOB_ERRORS,
        400: ("invalid_panel_request", "nothing_to_review", "unknown_hypotheses"),
        404: ("not_found",),
    }

    def post(self, request):
        values = validated(self.InputSerializer, request.data)
        run = benchmark = None
        if "run" in values:
            run = run_get(values["run"], request.user)
            if run is None:
                raise NotFound("There is no screening run with this id.")
        else:
            benchmark = benchmark_for_user(user=request.user, benchmark_id=values["benchmark"])
        job = panel.panel_start_for_hypotheses(
            run=run, benchmark=benchmark, hypotheses=values["hypotheses"], redo=values["redo"], user=request.user
        )
        return job_answer(job)


class SubjectApi(APIView):
    permission_classes = [CanReadAll]

    class OutputSerializer(ProfileSerializer):
        id = serializers.IntegerField()
        title = serializers.CharField()
        dimensions = DimensionSerializer(many=True)
        reference = PanelReviewSerializer(
            allow_null=True, help_text="the fresh-context reference's review (role reference_reviewer), or null"
        )

    def get(self, request, subject_id: int):
        found = selectors.subject_profile(subject_id)
        if found is None:
            raise NotFound("Nothing with this id was reviewed by the panel.")
        return Response(
            {
                "id": found.subject.pk,
                "title": found.title,
                "dimensions": DIMENSIONS,
                "reviews": [review_as_dict(review) for review in found.reviews],
                **profile_as_dict(found.profile),
                "revision": revision_as_dict(found.revision),
                "reference": review_as_dict(found.reference) if found.reference is not None else None,
            }
        )


urlpatterns = [
    path(
        "api/v1/cohorts/<int:cohort_id>/ai-panel",
        by_method(get=CohortPanelApi, post=CohortPanelStartApi),
        name="api-cohort-ai-panel",
    ),
    path(
        "api/v1/cohorts/<int:cohort_id>/comparisons",
        by_method(get=ComparisonsListApi, post=ComparisonsImportApi),
        name="api-cohort-comparisons",
    ),
    path(
        "api/v1/cohorts/<int:cohort_id>/comparisons/run",
        ComparisonsRunApi.as_view(),
        name="api-cohort-comparisons-run",
    ),
    path("api/v1/cohorts/<int:cohort_id>/ratings", RatingsApi.as_view(), name="api-cohort-ratings"),
    path(
        "api/v1/cohorts/<int:cohort_id>/ratings/recompute",
        RatingsRecomputeApi.as_view(),
        name="api-cohort-ratings-recompute",
    ),
    path("api/v1/cohorts/<int:cohort_id>/calibration", CalibrationApi.as_view(), name="api-cohort-calibration"),
    path("api/v1/ai-panel/prompts", PromptsApi.as_view(), name="api-panel-prompts"),
    path("api/v1/ai-panel/hypotheses", HypothesesPanelStartApi.as_view(), name="api-panel-hypotheses"),
    path("api/v1/ai-panel/subjects/<int:subject_id>", SubjectApi.as_view(), name="api-panel-subject"),
]
