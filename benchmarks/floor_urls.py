"""The project's URLs plus the floors of the page and API benchmarks: the least a request through the same
middleware, session and framework costs, served beside the real views by the same process.

- `/floor/page/`: a login-required page rendering a tiny template (the floor of the reviewer's pages);
- `/floor/api/`: a trivial DRF view answering a small JSON object, no authentication (the floor of the public API);
- `/floor/plain-queue/` and `/floor/plain-review/<id>/`: the reviewer's queue and review page as an ordinary Django
  developer would write them (`select_related` and a template that loops over the rows and the protocol's form),
  the second reference of the reviewer's pages: what the product's pages are measured against instead of a floor.

Used through `floor_settings` (this URL configuration and otherwise the project's settings).
"""

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template import engines
from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

TINY = engines["django"].from_string("<!doctype html><title>Floor</title><p>Signed in as {{ user.username }}.</p>")


@login_required
def tiny_page(request):
    return HttpResponse(TINY.render({}, request))


@login_required
def plain_queue(request):
    from reviewapp.models import Assignment
    from reviewapp.selectors.packets import VISIBLE_COHORT_STATUSES

    assignments = (
        Assignment.objects.filter(reviewer=request.user, cohort__status__in=VISIBLE_COHORT_STATUSES)
        .select_related("cohort", "proposal", "review")
        .order_by("cohort__created_at", "cohort_id", "position", "pk")
    )
    return render(request, "plain/queue.html", {"assignments": assignments})


def _plain_questions() -> list:
    from reviewapp import protocol

    questions = [
        (
            "overall",
            "Overall research value",
            [(str(v), str(v), label, anchor) for v, label, anchor in protocol.OVERALL_SCALE],
        ),
        (
            "recommendation",
            "Recommendation",
            [(key, str(n), label, anchor) for n, (key, label, anchor) in enumerate(protocol.RECOMMENDATIONS, start=1)],
        ),
    ]
    for field, label, _prompt, anchors in protocol.CRITERIA:
        options = [(str(n), str(n), "", anchor) for n, anchor in enumerate(anchors, start=1)]
        questions.append((field, label, [*options, (protocol.CANT_JUDGE, "0", protocol.CANT_JUDGE_LABEL, "")]))
    questions.append(
        (
            "flaw_verdict",
            "Design-flaw verdict",
            [(key, "", label, anchor) for key, label, anchor in protocol.FLAW_VERDICTS],
        )
    )
    return questions


@login_required
def plain_review(request, assignment_id: int):
    from reviewapp.models import Assignment
    from reviewapp.selectors.packets import VISIBLE_COHORT_STATUSES

    assignment = get_object_or_404(
        Assignment.objects.select_related("cohort", "proposal__task", "review"),
        pk=assignment_id,
        reviewer=request.user,
        cohort__status__in=VISIBLE_COHORT_STATUSES,
    )
    in_cohort = Assignment.objects.filter(reviewer=request.user, cohort=assignment.cohort)
    earlier = in_cohort.filter(
        Q(position__lt=assignment.position) | Q(position=assignment.position, pk__lt=assignment.pk)
    )
    review = getattr(assignment, "review", None)
    questions = []
    for name, label, options in _plain_questions():
        value = getattr(review, name) if review is not None else None
        questions.append((name, label, options, "" if value is None else str(value)))
    proposal = assignment.proposal
    sections = [
        ("Mechanism", proposal.mechanism),
        ("Prediction", proposal.prediction),
        ("Investigation plan", proposal.investigation_plan),
        ("Data requirements", proposal.data_requirements),
        ("Alternative explanations", proposal.alternative_explanations),
        ("Citations", proposal.citations),
    ]
    context = {
        "assignment": assignment,
        "position": earlier.count() + 1,
        "total": in_cohort.count(),
        "review": review,
        "questions": questions,
        "sections": sections,
    }
    return render(request, "plain/review.html", context)


class TrivialApi(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    def get(self, request):
        return Response({"ok": True})


urlpatterns = [
    path("floor/page/", tiny_page, name="floor-page"),
    path("floor/api/", TrivialApi.as_view(), name="floor-api"),
    path("floor/plain-queue/", plain_queue, name="plain-queue"),
    path("floor/plain-review/<int:assignment_id>/", plain_review, name="plain-review"),
    path("", include("reviewapp.urls")),
]
