"""The project's URLs plus the floors of the page and API benchmarks: the least a request through the same
middleware, session and framework costs, served beside the real views by the same process.

- `/floor/page/`: a login-required page rendering a tiny template (the floor of the reviewer's pages);
- `/floor/api/`: a trivial DRF view answering a small JSON object, no authentication (the floor of the public API);
- `/floor/plain-queue/` and `/floor/plain-review/<id>/`: the reviewer's queue and review page as an ordinary Django
  developer would write them (`select_related` and a template that loops over the rows and the protocol's form),
  the second reference of the reviewer's pages: what the product's pages are measured against instead of a floor.
  The plain review page shows what the product's does for the same answers (the packet, the guidelines, the
  questions shown, the flaw checklist when the verdict asks for it, the skip form), with less markup (no htmx
  attributes, classes or data attributes for the page's script).

Used through `floor_settings` (this URL configuration and otherwise the project's settings).
"""

from django.contrib.auth.decorators import login_required
from django.core import signing
from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template import engines
from django.urls import include, path
from django.utils import timezone
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

    head = [
        (
            "overall",
            "Overall research value",
            "",
            [(str(v), str(v), label, anchor) for v, label, anchor in protocol.OVERALL_SCALE],
        ),
        (
            "recommendation",
            "Recommendation",
            "",
            [(key, str(n), label, anchor) for n, (key, label, anchor) in enumerate(protocol.RECOMMENDATIONS, start=1)],
        ),
    ]
    criteria = []
    for field, label, prompt, anchors in protocol.CRITERIA:
        options = [(str(n), str(n), "", anchor) for n, anchor in enumerate(anchors, start=1)]
        criteria.append((field, label, prompt, [*options, (protocol.CANT_JUDGE, "0", protocol.CANT_JUDGE_LABEL, "")]))
    flaw_verdict = (
        "flaw_verdict",
        "Design-flaw verdict",
        "Does the investigation plan have a consequential design flaw?",
        [
            (key, "0" if key == protocol.CANT_JUDGE else str(n), label, anchor)
            for n, (key, label, anchor) in enumerate(protocol.FLAW_VERDICTS, start=1)
        ],
    )
    return head, criteria, flaw_verdict


@login_required
def plain_review(request, assignment_id: int):
    """The review page's content and form for the same assignment and answers: the six criteria once the first two
    questions are answered, the flaw checklist once the verdict asks for it, the skip form, the guidelines."""
    from reviewapp import protocol
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
    head, criteria, flaw_verdict = _plain_questions()

    def answer(name: str) -> str:
        value = getattr(review, name) if review is not None else None
        return "" if value is None else str(value)

    unlocked = bool(answer("overall") and answer("recommendation"))
    shown = [*head, *(criteria if unlocked else []), flaw_verdict]
    questions = [(name, label, prompt, options, answer(name)) for name, label, prompt, options in shown]
    ticked = review.flaw_checklist if review is not None else []
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
        "unlocked": unlocked,
        "checklist": [(key, label, key in ticked) for key, label in protocol.FLAW_CHECKLIST],
        "checklist_shown": answer("flaw_verdict") not in ("", "absent"),
        "sections": sections,
        "opened": signing.dumps(int(timezone.now().timestamp()), salt="plain-review-opened"),
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
