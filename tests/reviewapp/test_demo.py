import io
import re
from collections import Counter

from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import Count
from django.test import Client

from reviewapp.demo.cohort import (
    DEMO_ACCOUNTS,
    DEMO_COHORT_FILE,
    DEMO_COHORT_NAME,
    DEMO_DATASET,
    DEMO_FIRST_REVIEWER_SUBMITS,
    DEMO_REVIEWERS,
    DEMO_REVIEWERS_PER_PROPOSAL,
)
from reviewapp.models import Assignment, AuditEvent, Cohort, Conflict, ImportBatch, Proposal, ResearchTask, Review
from reviewapp.services.imports import cohort_import_file
from tests import factories

LOGIN_LINE = re.compile(r"^\s+(demo-[\w-]+)\s+(\w+)\s+(\S+)$", re.MULTILINE)


def load_demo() -> str:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def printed_logins(output: str) -> dict[str, tuple[str, str]]:
    return {username: (role, password) for username, role, password in LOGIN_LINE.findall(output)}


def record_counts() -> dict[str, int]:
    models = (User, Cohort, ResearchTask, Proposal, Proposal.parents.through, ImportBatch, Assignment, Review, Conflict)
    return {model.__name__: model.objects.count() for model in models}


def test_demo_file_imports_cleanly_with_revisions(db, coordinator):
    cohort = factories.make_cohort()

    result = cohort_import_file(
        cohort=cohort, filename=DEMO_COHORT_FILE.name, content=DEMO_COHORT_FILE.read_bytes(), user=coordinator
    )

    assert result.proposals >= 30 and result.tasks >= 5
    assert cohort.proposals.count() == result.proposals
    assert set(ResearchTask.objects.values_list("dataset", flat=True)) == {DEMO_DATASET}
    parent_counts = Counter(Proposal.objects.annotate(n=Count("parents")).values_list("n", flat=True))
    assert parent_counts[1] >= 4, "revisions (one parent each)"
    assert parent_counts[2] >= 1, "a crossover (two parents)"
    per_task = Counter(Proposal.objects.values_list("task__key", flat=True))
    assert min(per_task.values()) >= 5


def test_demo_citations_are_marked_illustrative_and_carry_no_identifiers(db):
    text = DEMO_COHORT_FILE.read_text(encoding="utf-8")
    assert not re.search(r"\bdoi\b|\bpmid\b|\b10\.\d{4,}/", text, re.IGNORECASE)
    citations = re.findall(r'"citations": "(.*?)"', text)
    assert citations
    for field in citations:
        for citation in field.split("\\n"):
            assert citation.startswith("Demo citation:") and citation.endswith("(illustrative)")


def test_load_demo_twice_creates_nothing_more(db):
    load_demo()
    first = record_counts()
    audit_events = AuditEvent.objects.count()

    load_demo()

    assert record_counts() == first
    assert AuditEvent.objects.count() == audit_events
    assert Cohort.objects.filter(name=DEMO_COHORT_NAME).count() == 1


def test_load_demo_creates_the_demo_accounts_with_their_roles(db):
    output = load_demo()

    for username, role in DEMO_ACCOUNTS:
        account = User.objects.get(username=username)
        assert list(account.groups.values_list("name", flat=True)) == [role]
        assert printed_logins(output)[username][0] == role
    assert not User.objects.filter(is_superuser=True).exists()


def test_every_demo_proposal_has_two_demo_reviewers(db):
    load_demo()

    cohort = Cohort.objects.get(name=DEMO_COHORT_NAME)
    assert cohort.is_demo and cohort.status == Cohort.Status.OPEN
    assert cohort.proposals.count() >= 30
    per_proposal = Counter(Assignment.objects.filter(cohort=cohort).values_list("proposal_id", flat=True))
    assert set(per_proposal) == set(cohort.proposals.values_list("pk", flat=True))
    assert set(per_proposal.values()) == {DEMO_REVIEWERS_PER_PROPOSAL}
    loads = Counter(Assignment.objects.filter(cohort=cohort).values_list("reviewer__username", flat=True))
    assert set(loads) == set(DEMO_REVIEWERS)
    assert max(loads.values()) - min(loads.values()) <= 1


def test_first_demo_reviewer_has_submitted_reviews_a_draft_and_work_left(db):
    load_demo()
    load_demo()

    statuses = Counter(
        Review.objects.filter(assignment__reviewer__username=DEMO_REVIEWERS[0]).values_list("status", flat=True)
    )
    assert statuses == {Review.Status.SUBMITTED: 1 + DEMO_FIRST_REVIEWER_SUBMITS, Review.Status.DRAFT: 1}
    queue = Assignment.objects.filter(reviewer__username=DEMO_REVIEWERS[0])
    assert queue.filter(review__isnull=True).count() >= 5, "the demo reviewer still has reviews to do"
    # The two other demo reviewers have submitted every review, so every proposal has a human review to compare the
    # AI panel with.
    others = Review.objects.filter(assignment__reviewer__username__in=DEMO_REVIEWERS[1:])
    assert set(others.values_list("status", flat=True)) == {Review.Status.SUBMITTED}
    assert others.count() == Assignment.objects.filter(reviewer__username__in=DEMO_REVIEWERS[1:]).count()
    assert set(others.values_list("assignment__proposal", flat=True)) == set(
        Cohort.objects.get(name=DEMO_COHORT_NAME).proposals.values_list("pk", flat=True)
    )


def test_printed_password_logs_in_and_the_next_load_replaces_it(db):
    first = printed_logins(load_demo())
    second = printed_logins(load_demo())

    assert set(first) == set(second) == {username for username, _ in DEMO_ACCOUNTS}
    for username in first:
        assert first[username][1] != second[username][1]
    for username, (_, password) in second.items():
        response = Client().post("/accounts/login/", {"username": username, "password": password})
        assert response.status_code == 302, f"{username} could not log in with the printed password"
    stale = Client().post("/accounts/login/", {"username": "demo-reviewer-1", "password": first["demo-reviewer-1"][1]})
    assert stale.status_code == 200 and "_auth_user_id" not in stale.wsgi_request.session


def test_load_demo_prints_the_address_with_the_port_of_the_settings(db, settings):
    settings.PORT = 8123

    output = load_demo()

    assert "http://127.0.0.1:8123/" in output
    assert "http://127.0.0.1:8123/open-hypothesis/" in output
    assert "new passwords at every start" in output


def test_load_demo_leaves_a_closed_demo_cohort_alone(db):
    load_demo()
    Cohort.objects.filter(name=DEMO_COHORT_NAME).update(status=Cohort.Status.CLOSED)
    counts = record_counts()

    output = load_demo()

    assert record_counts() == counts
    assert Cohort.objects.get(name=DEMO_COHORT_NAME).status == Cohort.Status.CLOSED
    assert set(printed_logins(output)) == {username for username, _ in DEMO_ACCOUNTS}


def test_demo_conflicts_are_declared_and_respected_by_the_assignment(db):
    load_demo()

    conflicts = Conflict.objects.filter(proposal__isnull=False)
    assert conflicts.count() == 2
    for conflict in conflicts:
        assert not Assignment.objects.filter(reviewer=conflict.reviewer, proposal=conflict.proposal).exists()


def test_demo_reviews_let_every_cohort_statistic_show_something(db):
    from reviewapp.selectors.analysis import cohort_review_analysis

    load_demo()

    result = cohort_review_analysis(Cohort.objects.get(name=DEMO_COHORT_NAME))
    assert result.submitted_reviews >= 55
    assert result.revision_pairs >= 4 and result.revisions.overall.pairs >= 4
    assert result.revisions.overall.improved and result.revisions.overall.worsened
    for agreement in result.agreement:
        assert agreement.proposals_with_pairs >= 15, agreement.criterion
        assert agreement.alpha is not None, agreement.criterion
    overall = next(item for item in result.agreement if item.criterion == "overall")
    assert overall.alpha > 0, "demo reviewers agree more than by chance"
