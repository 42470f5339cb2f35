"""API of the levels above a single hypothesis (docs/protocol.md#research-runs): the rubrics, a cohort's development
paths, research runs, contribution families (read and recorded) and the five levels side by side; an assessment's
review status.

Coordinators and analysts read; only coordinators record. Reviewers get 403 on every route here.
"""

from django.urls import path
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.core.errors import validated
from reviewapp.core.paging import PageFilter, page_of
from reviewapp.core.roles import CanReadAll, IsCoordinator
from reviewapp.core.routing import by_method
from reviewapp.models import DELIVERY_STAGES, DELIVERY_STATUSES, Cohort
from reviewapp.panel import development as rules
from reviewapp.panel import research, selectors
from reviewapp.panel.models import (
    FAMILY_MATURITIES,
    FAMILY_STATUSES,
    REVIEWED_RECORDS,
    Assessment,
    ReviewStatus,
)
from reviewapp.panel.research import AssessmentRow
from reviewapp.panel.services.families import families_group, family_record
from reviewapp.panel.services.levels import assessment_review_status_set, review_status_set
from reviewapp.selectors.cohorts import cohort_for_user


def assessment_as_dict(row: AssessmentRow | None) -> dict | None:
    if row is None:
        return None
    composite = row.composite
    return {
        "id": row.pk,
        "state": row.state,
        "rubric": row.rubric,
        "dimensions": row.scores,
        "weights": row.weights,
        "composite": composite.value if composite else None,
        "scope": composite.scope if composite else rules.INCOMPLETE,
        "mask": composite.mask if composite else "",
        "rationale": row.rationales,
        "evidence": row.evidence,
        "status": row.review_status,
        "snapshot": row.packet_sha256,
        "prompt_version": row.prompt_version,
        "model": row.model_name,
        "simulated": row.simulated,
        "error": row.error,
    }


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": rules.ANCHOR_LOW, "maximum": rules.ANCHOR_HIGH},
            {"type": "string", "enum": [rules.UNKNOWN, rules.INAPPLICABLE]},
        ]
    }
)
class AnchorScoreField(serializers.Field):
    """A score on the rubric's anchors (0–4), or "unknown" or "inapplicable"."""

    def to_representation(self, value):
        return value


class AssessmentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.ChoiceField(choices=Assessment.State.values, help_text="done or failed (no scores)")
    rubric = serializers.CharField(help_text="the rubric's version")
    dimensions = serializers.DictField(
        child=AnchorScoreField(), help_text='dimension → 0–4, "unknown" or "inapplicable"'
    )
    weights = serializers.DictField(child=serializers.IntegerField())
    composite = serializers.FloatField(allow_null=True, help_text="/100; null unless full or restricted")
    scope = serializers.ChoiceField(choices=[rules.FULL, rules.RESTRICTED, rules.INCOMPLETE])
    mask = serializers.CharField(help_text="1 applicable, 0 inapplicable, per dimension in rubric order")
    rationale = serializers.DictField(child=serializers.CharField(), help_text="dimension → rationale")
    evidence = serializers.DictField(child=serializers.CharField(allow_blank=True), help_text="dimension → quote")
    status = serializers.ChoiceField(choices=ReviewStatus.choices)
    snapshot = serializers.CharField(help_text="sha256 of the packet the judge was sent")
    prompt_version = serializers.CharField()
    model = serializers.CharField()
    simulated = serializers.BooleanField()
    error = serializers.CharField(allow_blank=True)


class RubricListApi(APIView):
    """The rubrics of the path and run judges: dimensions with labels, definitions and weights, and the anchors."""

    permission_classes = [CanReadAll]
    paged = True

    class FilterSerializer(PageFilter):
        pass

    class OutputSerializer(serializers.Serializer):
        class Dimension(serializers.Serializer):
            key = serializers.CharField()
            label = serializers.CharField()
            definition = serializers.CharField()
            weight = serializers.IntegerField()
            needs_budget = serializers.BooleanField()

        version = serializers.CharField()
        level = serializers.ChoiceField(choices=Assessment.Level.values)
        title = serializers.CharField()
        labels_note = serializers.CharField()
        dimensions = Dimension(many=True)
        anchors = serializers.DictField(child=serializers.CharField(), help_text="score 0–4 → its anchor")

    def get(self, request):
        filters = validated(self.FilterSerializer, request.query_params)
        page = page_of(rules.rubrics(), filters)
        results = [
            {
                "version": item.version,
                "level": item.level,
                "title": item.title,
                "labels_note": item.labels_note,
                "dimensions": [vars(dimension) for dimension in item.dimensions],
                "anchors": {str(score): text for score, text in item.anchors.items()},
            }
            for item in page["results"]
        ]
        return Response({**page, "results": self.OutputSerializer(results, many=True).data})


class PathListApi(APIView):
    """A cohort's development paths (one per terminal version, root first) with their context and assessment."""

    permission_classes = [CanReadAll]
    paged = True

    class FilterSerializer(PageFilter):
        pass

    class OutputSerializer(serializers.Serializer):
        run = serializers.CharField()
        terminal = serializers.CharField()
        proposals = serializers.ListField(child=serializers.CharField(), help_text="root → terminal")
        context = serializers.ListField(child=serializers.CharField(), help_text="other parents of its versions")
        assessment = AssessmentSerializer(allow_null=True)

    def get(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        filters = validated(self.FilterSerializer, request.query_params)
        levels = research.cohort_levels(cohort)
        page = page_of(levels.tree.paths, filters)
        results = [
            {
                "run": item.run,
                "terminal": item.terminal,
                "proposals": list(item.proposals),
                "context": list(item.context),
                "assessment": assessment_as_dict(levels.path_assessment(item.terminal)),
            }
            for item in page["results"]
        ]
        return Response({**page, "results": self.OutputSerializer(results, many=True).data})


class StageCountsSerializer(serializers.Serializer):
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    unattempted = serializers.IntegerField()
    not_recorded = serializers.IntegerField()


def _delivery_field():
    return serializers.DictField(
        child=StageCountsSerializer(), help_text=f"stage ({', '.join(DELIVERY_STAGES)}) → counts"
    )


class ResearchRunListApi(APIView):
    """A cohort's research runs: named by the import, or connected components named by their smallest proposal id."""

    permission_classes = [CanReadAll]
    paged = True

    class FilterSerializer(PageFilter):
        pass

    class OutputSerializer(serializers.Serializer):
        class Decision(serializers.Serializer):
            seq = serializers.IntegerField()
            kind = serializers.CharField()
            proposals = serializers.ListField(child=serializers.CharField())
            budget = serializers.FloatField(allow_null=True)
            rationale = serializers.CharField(allow_blank=True)

        class Trajectory(serializers.Serializer):
            id = serializers.CharField()
            role = serializers.CharField(allow_blank=True)
            summary = serializers.CharField(allow_blank=True)

        class DeliveryRecord(serializers.Serializer):
            proposal = serializers.CharField()
            stage = serializers.ChoiceField(choices=DELIVERY_STAGES)
            status = serializers.ChoiceField(choices=DELIVERY_STATUSES)
            evidence = serializers.CharField(allow_blank=True)

        id = serializers.CharField()
        named = serializers.BooleanField(help_text="false: a connected component named by its smallest proposal id")
        task = serializers.CharField()
        author = serializers.CharField(allow_blank=True)
        proposals = serializers.ListField(child=serializers.CharField())
        transitions = serializers.IntegerField()
        paths = serializers.ListField(child=serializers.CharField(), help_text="the terminals of its paths")
        decisions = Decision(many=True)
        budget = serializers.FloatField(allow_null=True)
        budget_unit = serializers.CharField(allow_blank=True)
        budget_recorded = serializers.BooleanField()
        notes = serializers.CharField(allow_blank=True)
        trajectories = Trajectory(many=True)
        assessment = AssessmentSerializer(allow_null=True)
        delivery = _delivery_field()
        delivery_records = DeliveryRecord(many=True)

    def get(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        filters = validated(self.FilterSerializer, request.query_params)
        levels = research.cohort_levels(cohort)
        page = page_of(sorted(levels.tree.runs.values(), key=lambda run: run.id), filters)
        results = [
            {
                "id": run.id,
                "named": run.named,
                "task": run.task,
                "author": run.author,
                "proposals": run.proposals,
                "transitions": run.transitions,
                "paths": run.paths,
                "decisions": run.decisions,
                "budget": run.budget,
                "budget_unit": run.budget_unit,
                "budget_recorded": run.budget_recorded,
                "notes": run.notes,
                "trajectories": run.trajectories,
                "assessment": assessment_as_dict(levels.run_assessment(run.id)),
                "delivery": research.delivery_counts(run, levels.tree.delivery),
                "delivery_records": research.delivery_records(run, levels.tree),
            }
            for run in page["results"]
        ]
        return Response({**page, "results": self.OutputSerializer(results, many=True).data})


class FamilySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    members = serializers.ListField(child=serializers.CharField())
    question = serializers.CharField(allow_blank=True)
    increment = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=FAMILY_STATUSES)
    maturity = serializers.ChoiceField(choices=FAMILY_MATURITIES)
    evidence = serializers.CharField(allow_blank=True)
    review_status = serializers.ChoiceField(choices=ReviewStatus.choices)


class FamilyListApi(APIView):
    """A cohort's contribution families. The starting grouping (ancestry and exact duplicate statements) is made the
    first time they are read, and proposals added later join their relatives' family."""

    permission_classes = [CanReadAll]
    paged = True

    class FilterSerializer(PageFilter):
        pass

    OutputSerializer = FamilySerializer

    def get(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        filters = validated(self.FilterSerializer, request.query_params)
        families_group(cohort=cohort)
        page = page_of(research.cohort_families(cohort), filters)
        return Response({**page, "results": self.OutputSerializer(page["results"], many=True).data})


class FamilyRecordApi(APIView):
    """Record a family: any of question, increment, status, maturity, evidence, review_status, and `members` (proposal
    ids of the cohort moved into this family). Nothing passes to other families or members. Audit-logged."""

    permission_classes = [IsCoordinator]
    error_codes = {400: ("invalid_family", "unknown_proposals")}

    class InputSerializer(serializers.Serializer):
        question = serializers.CharField(required=False, allow_blank=True, max_length=4000)
        increment = serializers.CharField(required=False, allow_blank=True, max_length=8000)
        status = serializers.ChoiceField(choices=FAMILY_STATUSES, required=False)
        maturity = serializers.ChoiceField(choices=FAMILY_MATURITIES, required=False)
        evidence = serializers.CharField(required=False, allow_blank=True, max_length=20000)
        review_status = serializers.ChoiceField(choices=ReviewStatus.choices, required=False)
        members = serializers.ListField(
            child=serializers.CharField(max_length=200), required=False, max_length=10_000, allow_empty=True
        )

    OutputSerializer = FamilySerializer

    def put(self, request, cohort_id: int, family_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        values = validated(self.InputSerializer, request.data)
        family = selectors.cohort_family(cohort, family_id)
        family_record(cohort=cohort, family=family, values=values, user=request.user)
        recorded = next(item for item in research.cohort_families(cohort) if item["id"] == family.pk)
        return Response(self.OutputSerializer(recorded).data)


class _ShareSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="over all transitions; null when there are none")


class _LevelSerializer(serializers.Serializer):
    class Restricted(serializers.Serializer):
        mask = serializers.CharField()
        n = serializers.IntegerField()
        mean = serializers.FloatField()

    total = serializers.IntegerField()
    assessed = serializers.IntegerField()
    failed = serializers.IntegerField()
    not_assessed = serializers.IntegerField()
    complete = serializers.IntegerField(help_text="full composites")
    mean_composite = serializers.FloatField(allow_null=True, help_text="of the full composites only")
    restricted = Restricted(many=True, help_text="restricted-scope composites by applicability mask")
    incomplete = serializers.IntegerField()


class EvaluationSerializer(serializers.Serializer):
    class Hypotheses(serializers.Serializer):
        complete = serializers.IntegerField()
        total = serializers.IntegerField()
        mean_q = serializers.FloatField(allow_null=True)

    class Transitions(serializers.Serializer):
        total = serializers.IntegerField()
        judged = serializers.IntegerField()
        failed = serializers.IntegerField()
        not_judged = serializers.IntegerField()
        substantive_progress = _ShareSerializer()
        useful_step = _ShareSerializer()
        repetition = _ShareSerializer()
        insufficient_evidence = _ShareSerializer()

    class Families(serializers.Serializer):
        total = serializers.IntegerField()
        with_evidence = serializers.IntegerField(help_text="maturity diagnostically examined or beyond")

    hypotheses = Hypotheses()
    transitions = Transitions()
    paths = _LevelSerializer()
    runs = _LevelSerializer()
    families = Families()
    delivery = _delivery_field()


def cohort_evaluation(cohort: Cohort) -> dict:
    """The five levels side by side, for the cohort and for each author model."""
    families_group(cohort=cohort)
    levels = research.cohort_levels(cohort)
    q_of = {row.proposal_id: row.profile.q for row in selectors.cohort_panel(cohort).rows}
    authors = sorted({version.author for version in levels.tree.versions.values()})
    return {
        **research.levels_summary(levels, q_of),
        "by_author": [{"author": author, **research.levels_summary(levels, q_of, author=author)} for author in authors],
    }


class EvaluationApi(APIView):
    """Hypotheses, transitions, paths, runs and families side by side, with delivery beside them (never combined),
    for the cohort and per author model (`by_author`)."""

    permission_classes = [CanReadAll]

    class OutputSerializer(EvaluationSerializer):
        class ByAuthor(EvaluationSerializer):
            author = serializers.CharField(allow_blank=True)

        by_author = ByAuthor(many=True)

    def get(self, request, cohort_id: int):
        return Response(
            self.OutputSerializer(cohort_evaluation(cohort_for_user(user=request.user, cohort_id=cohort_id))).data
        )


class AssessmentStatusApi(APIView):
    """Mark a path or run assessment checked or disputed (or automated again); audit-logged."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=ReviewStatus.choices)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        status = serializers.ChoiceField(choices=ReviewStatus.choices)

    def put(self, request, cohort_id: int, assessment_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id)
        values = validated(self.InputSerializer, request.data)
        assessment = selectors.cohort_assessment(cohort, assessment_id)
        assessment = assessment_review_status_set(assessment=assessment, status=values["status"], user=request.user)
        return Response(self.OutputSerializer({"id": assessment.pk, "status": assessment.review_status}).data)


class ReviewStatusApi(APIView):
    """Mark any model-answered assessment record checked or disputed (or automated again): a panel review
    (`panel_review`), a fresh-context reference review (`reference_review`), a revision judgment
    (`revision_judgment`) or a path or run assessment (`assessment`). Audit-logged."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        record = serializers.ChoiceField(choices=list(REVIEWED_RECORDS))
        id = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
        status = serializers.ChoiceField(choices=ReviewStatus.choices)

    class OutputSerializer(serializers.Serializer):
        record = serializers.CharField()
        id = serializers.IntegerField()
        status = serializers.ChoiceField(choices=ReviewStatus.choices)

    # 404: the record the body names does not exist.
    error_codes = {404: ("not_found",)}

    def put(self, request):
        values = validated(self.InputSerializer, request.data)
        target = selectors.reviewed_record(values["record"], values["id"])
        target = review_status_set(record=target, status=values["status"], user=request.user)
        return Response(
            self.OutputSerializer({"record": values["record"], "id": target.pk, "status": target.review_status}).data
        )


urlpatterns = [
    path("api/v1/ai-panel/review-status", by_method(put=ReviewStatusApi), name="api-panel-review-status"),
    path("api/v1/ai-panel/rubrics", RubricListApi.as_view(), name="api-panel-rubrics"),
    path("api/v1/cohorts/<int:cohort_id>/paths", PathListApi.as_view(), name="api-cohort-paths"),
    path("api/v1/cohorts/<int:cohort_id>/research-runs", ResearchRunListApi.as_view(), name="api-cohort-runs"),
    path(
        "api/v1/cohorts/<int:cohort_id>/contribution-families",
        FamilyListApi.as_view(),
        name="api-cohort-families",
    ),
    path(
        "api/v1/cohorts/<int:cohort_id>/contribution-families/<int:family_id>",
        by_method(put=FamilyRecordApi),
        name="api-cohort-family",
    ),
    path("api/v1/cohorts/<int:cohort_id>/evaluation", EvaluationApi.as_view(), name="api-cohort-evaluation"),
    path(
        "api/v1/cohorts/<int:cohort_id>/assessments/<int:assessment_id>/status",
        by_method(put=AssessmentStatusApi),
        name="api-cohort-assessment-status",
    ),
]
