"""The review page's query written out in SQL gives the rows of its ORM twin (`review_page_query`), on either
database: for a draft, a submitted review, none yet, a deferred assignment, a closed cohort, and for someone else's or a
draft cohort's assignment (no row)."""

import pytest

from reviewapp import protocol
from reviewapp.selectors.reviews import review_page_query, review_page_row
from reviewapp.services.reviews import assignment_defer, review_save, review_submit
from tests import factories

pytestmark = pytest.mark.django_db

COMPLETE = {
    "overall": 4,
    "recommendation": "revise",
    **dict.fromkeys(protocol.CRITERION_FIELDS, "3"),
    "flaw_verdict": "fixable",
    "flaw_checklist": [protocol.FLAW_CHECKLIST_KEYS[0]],
    "main_flaw": "Too few mice.",
    "comments": "Worth a pilot.",
}


def test_the_written_out_query_gives_the_orms_rows(reviewer, other_reviewer):
    task = factories.make_task(question="Does rapamycin delay follicle loss?", background="Follicles decline.")
    proposals = [factories.make_proposal(task=task, statement=f"Statement {n}.", mechanism="mTORC1.") for n in range(5)]
    cohort = factories.make_cohort(proposals, status="open", name="Ovary")
    closed = factories.make_cohort([factories.make_proposal()], status="closed", name="Closed")
    draft_cohort = factories.make_cohort([factories.make_proposal()], status="draft", name="Draft")
    mine = [factories.make_assignment(cohort, reviewer, proposal) for proposal in proposals[:4]]
    theirs = factories.make_assignment(cohort, other_reviewer, proposals[4])
    in_closed = factories.make_assignment(closed, reviewer, closed.proposals.get())
    in_draft = factories.make_assignment(draft_cohort, reviewer, draft_cohort.proposals.get())
    review_save(assignment=mine[0], reviewer=reviewer, answers={"overall": 3, "comments": "So far."}, version=0)
    review_submit(assignment=mine[1], reviewer=reviewer, answers=COMPLETE, version=0)
    assignment_defer(assignment=mine[2], reviewer=reviewer, reason="Outside my field.")

    for assignment in (*mine, in_closed):
        written = review_page_row(reviewer_id=reviewer.pk, assignment_id=assignment.pk)
        orm = review_page_query(reviewer_id=reviewer.pk, assignment_id=assignment.pk).get()
        assert written == orm, assignment
    rows = {a.pk: review_page_row(reviewer_id=reviewer.pk, assignment_id=a.pk) for a in mine}
    assert [(row["queue_earlier"], row["queue_total"]) for row in rows.values()] == [(0, 4), (1, 4), (2, 4), (3, 4)]
    assert rows[mine[1].pk]["review__flaw_checklist"] == [protocol.FLAW_CHECKLIST_KEYS[0]]
    assert rows[mine[2].pk]["deferred_at"].utcoffset() is not None
    for assignment in (theirs, in_draft):
        assert review_page_row(reviewer_id=reviewer.pk, assignment_id=assignment.pk) is None
        assert not review_page_query(reviewer_id=reviewer.pk, assignment_id=assignment.pk).exists()
