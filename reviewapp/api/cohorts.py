"""API: cohorts, their assignments and progress, and conflicts of interest.

Coordinators and analysts read; only coordinators write. Reviewers get 403 on every route here.
"""

from django.urls import path
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.core.errors import validated, validated_query
from reviewapp.core.fields import SeedField
from reviewapp.core.paging import PageFilter, page_data, page_of
from reviewapp.core.roles import CanReadAll, IsCoordinator
from reviewapp.core.routing import by_method
from reviewapp.models import Cohort, Conflict
from reviewapp.selectors import cohorts as cohort_selectors
from reviewapp.selectors.cohorts import cohort_for_user
from reviewapp.selectors.users import users_named
from reviewapp.services import cohorts as cohort_services
from reviewapp.services.cohorts import MAX_REVIEWERS_PER_PROPOSAL


class CohortOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    status = serializers.CharField()
    reviewers_per_proposal = serializers.IntegerField()
    seed = serializers.IntegerField()
    is_demo = serializers.BooleanField()
    proposal_count = serializers.IntegerField()
    assignment_count = serializers.IntegerField()
    submitted_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class CohortListApi(APIView):
    permission_classes = [CanReadAll]

    class OutputSerializer(CohortOutputSerializer):
        pass

    FilterSerializer = PageFilter
    paged = True

    def get(self, request):
        return Response(page_data(self.OutputSerializer, cohort_selectors.cohorts_with_counts(), request.query_params))


class CohortCreateApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        reviewers_per_proposal = serializers.IntegerField(min_value=1, max_value=MAX_REVIEWERS_PER_PROPOSAL, default=3)
        seed = SeedField(default=0)

    class OutputSerializer(CohortOutputSerializer):
        pass

    success_status = 201
    error_codes = {400: ("invalid_request",), 409: ("cohort_name_taken",)}

    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        cohort = cohort_services.cohort_create(**data, user=request.user)

        return Response(
            self.OutputSerializer(cohort_for_user(user=request.user, cohort_id=cohort.pk, counts=True)).data,
            status=status.HTTP_201_CREATED,
        )


class CohortDetailApi(APIView):
    permission_classes = [CanReadAll]

    class OutputSerializer(CohortOutputSerializer):
        pass

    def get(self, request, cohort_id: int):
        return Response(
            self.OutputSerializer(cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)).data
        )


class CohortStatusApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=Cohort.Status.values)

    class OutputSerializer(CohortOutputSerializer):
        pass

    error_codes = {409: ("cohort_status_refused",)}

    def post(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
        data = validated(self.InputSerializer, request.data)
        cohort_services.cohort_set_status(cohort=cohort, status=data["status"], user=request.user)

        return Response(
            self.OutputSerializer(cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)).data
        )


# More assignments than anyone reviews; a bound the schema can state.
MAX_LOAD = 100_000


class AssignmentRules(serializers.Serializer):
    """What an assignment request may ask for, on the API and on the cohort page alike."""

    per_proposal = serializers.IntegerField(min_value=1, max_value=MAX_REVIEWERS_PER_PROPOSAL)
    seed = SeedField(required=False)
    max_load = serializers.IntegerField(min_value=1, max_value=MAX_LOAD, required=False)


class CohortAssignApi(APIView):
    """Top every proposal up to k reviewers, balanced, excluding conflicts, deterministic for the seed."""

    permission_classes = [IsCoordinator]

    class InputSerializer(AssignmentRules):
        reviewers = serializers.ListField(child=serializers.CharField(), allow_empty=False, min_length=1)

    class OutputSerializer(serializers.Serializer):
        created = serializers.IntegerField()
        loads = serializers.DictField(child=serializers.IntegerField(), help_text="assignments per reviewer")

    success_status = 201
    error_codes = {400: ("assignment_impossible", "unknown_reviewer", "invalid_request"), 409: ("cohort_closed",)}

    def post(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
        data = validated(self.InputSerializer, request.data)
        reviewers = users_named(data["reviewers"])
        result = cohort_services.cohort_assign(
            cohort=cohort,
            reviewers=reviewers,
            per_proposal=data["per_proposal"],
            seed=data.get("seed", cohort.seed),
            max_load=data.get("max_load"),
            user=request.user,
        )

        return Response(self.OutputSerializer(result).data, status=status.HTTP_201_CREATED)


class AssignmentListApi(APIView):
    """A page of a cohort's assignments: ?reviewer=&proposal=&state=&limit=&offset=."""

    permission_classes = [CanReadAll]
    paged = True

    class FilterSerializer(PageFilter):
        reviewer = serializers.CharField(required=False, max_length=150)
        proposal = serializers.CharField(required=False, max_length=200)
        state = serializers.ChoiceField(choices=list(cohort_selectors.ASSIGNMENT_STATES), required=False)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        reviewer = serializers.CharField(source="reviewer.username")
        proposal = serializers.CharField(source="proposal.external_id")
        position = serializers.IntegerField()
        state = serializers.SerializerMethodField()
        deferred_reason = serializers.CharField()

        def get_state(self, assignment) -> str:
            return cohort_selectors.assignment_state(assignment)

    def get(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
        filters = validated_query(self.FilterSerializer, request.query_params)
        page = page_of(
            cohort_selectors.cohort_assignments(
                cohort,
                reviewer=filters.get("reviewer", ""),
                proposal=filters.get("proposal", ""),
                state=filters.get("state", ""),
            ),
            filters,
        )
        return Response({**page, "results": self.OutputSerializer(page["results"], many=True).data})


class ProgressSerializer(serializers.Serializer):
    assigned = serializers.IntegerField()
    submitted = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    not_started = serializers.IntegerField()
    deferred = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)


class CohortProgressApi(APIView):
    """Per reviewer and in total: assigned, submitted, in progress, not started, deferred, median seconds."""

    permission_classes = [CanReadAll]

    class OutputSerializer(serializers.Serializer):
        class ReviewerProgress(ProgressSerializer):
            username = serializers.CharField()

        class Totals(ProgressSerializer):
            proposals = serializers.IntegerField()

        cohort = CohortOutputSerializer()
        reviewers = ReviewerProgress(many=True)
        totals = Totals()

    def get(self, request, cohort_id: int):
        cohort = cohort_for_user(user=request.user, cohort_id=cohort_id, counts=True)
        progress = cohort_selectors.cohort_progress(cohort)
        return Response(
            self.OutputSerializer(
                {
                    "cohort": cohort,
                    "reviewers": [{"username": row.username, **row.as_dict()} for row in progress.reviewers],
                    "totals": {"proposals": cohort.proposal_count, **progress.totals.as_dict()},
                }
            ).data
        )


class AssignmentDeleteApi(APIView):
    permission_classes = [IsCoordinator]
    error_codes = {409: ("assignment_started", "cohort_closed")}

    @extend_schema(responses={204: None})
    def delete(self, request, assignment_id: int):
        assignment = cohort_selectors.assignment_get(assignment_id=assignment_id)
        cohort_services.assignment_remove(assignment=assignment, user=request.user)

        return Response(status=status.HTTP_204_NO_CONTENT)


class AssignmentReassignApi(APIView):
    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        reviewer = serializers.CharField()

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        reviewer = serializers.CharField(source="reviewer.username")
        proposal = serializers.CharField(source="proposal.external_id")
        position = serializers.IntegerField()

    error_codes = {
        400: ("unknown_reviewer", "invalid_request"),
        409: ("assignment_started", "cohort_closed", "already_assigned", "conflict_of_interest"),
    }

    def post(self, request, assignment_id: int):
        assignment = cohort_selectors.assignment_get(assignment_id=assignment_id)
        data = validated(self.InputSerializer, request.data)
        (reviewer,) = users_named([data["reviewer"]])
        assignment = cohort_services.assignment_reassign(assignment=assignment, reviewer=reviewer, user=request.user)

        return Response(self.OutputSerializer(assignment).data)


class ConflictCreateApi(APIView):
    """Declare a reviewer's conflict with a proposal (by its external id) or with every proposal of an author."""

    permission_classes = [IsCoordinator]

    class InputSerializer(serializers.Serializer):
        reviewer = serializers.CharField()
        kind = serializers.ChoiceField(choices=Conflict.Kind.values)
        proposal = serializers.CharField(required=False, allow_blank=True, default="")
        author = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
        note = serializers.CharField(required=False, allow_blank=True, default="")

        def validate(self, attrs):
            if bool(attrs["proposal"]) == bool(attrs["author"].strip()):
                raise serializers.ValidationError("A conflict names a proposal or an author, not both.")
            return attrs

    # The schema says what `validate` checks: a proposal or an author, not both.
    class ByProposalSerializer(serializers.Serializer):
        reviewer = serializers.CharField()
        kind = serializers.ChoiceField(choices=Conflict.Kind.values)
        proposal = serializers.CharField(help_text="the proposal's external id")
        note = serializers.CharField(required=False, allow_blank=True)

    class ByAuthorSerializer(serializers.Serializer):
        reviewer = serializers.CharField()
        kind = serializers.ChoiceField(choices=Conflict.Kind.values)
        author = serializers.CharField(max_length=200, help_text="every proposal of this author")
        note = serializers.CharField(required=False, allow_blank=True)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        reviewer = serializers.CharField(source="reviewer.username")
        kind = serializers.CharField()
        proposal = serializers.CharField(source="proposal.external_id", default=None)
        author = serializers.CharField()
        note = serializers.CharField()

    success_status = 201
    error_codes = {400: ("unknown_reviewer", "unknown_proposal", "invalid_request")}

    @extend_schema(
        request=PolymorphicProxySerializer(
            component_name="ConflictCreateInput",
            serializers=[ByProposalSerializer, ByAuthorSerializer],
            resource_type_field_name=None,
        )
    )
    def post(self, request):
        values = validated(self.InputSerializer, request.data)
        (reviewer,) = users_named([values["reviewer"]])
        proposal = cohort_selectors.proposal_with_id(values["proposal"]) if values["proposal"] else None
        conflict = cohort_services.conflict_declare(
            reviewer=reviewer,
            kind=values["kind"],
            proposal=proposal,
            author=values["author"],
            note=values["note"],
            user=request.user,
        )

        return Response(self.OutputSerializer(conflict).data, status=status.HTTP_201_CREATED)


urlpatterns = [
    path("cohorts", by_method(get=CohortListApi, post=CohortCreateApi), name="api-cohorts"),
    path("cohorts/<int:cohort_id>", CohortDetailApi.as_view(), name="api-cohort-detail"),
    path("cohorts/<int:cohort_id>/status", CohortStatusApi.as_view(), name="api-cohort-status"),
    path(
        "cohorts/<int:cohort_id>/assignments",
        by_method(post=CohortAssignApi, get=AssignmentListApi),
        name="api-cohort-assignments",
    ),
    path("cohorts/<int:cohort_id>/progress", CohortProgressApi.as_view(), name="api-cohort-progress"),
    path("assignments/<int:assignment_id>", AssignmentDeleteApi.as_view(), name="api-assignment"),
    path("assignments/<int:assignment_id>/reassign", AssignmentReassignApi.as_view(), name="api-assignment-reassign"),
    path("conflicts", ConflictCreateApi.as_view(), name="api-conflicts"),
]
