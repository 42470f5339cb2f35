from datetime import timedelta

import pytest
from django.utils import timezone

from reviewapp import protocol
from reviewapp.api.reviews import validated_answers, validated_defer_reason
from reviewapp.core.errors import ServiceError
from reviewapp.models import AuditEvent, Cohort, Review
from reviewapp.services.reviews import (
    MAX_COUNTED_GAP_SECONDS,
    ReviewIncomplete,
    ReviewInvalid,
    ReviewLocked,
    ReviewNotSubmitted,
    SaveSender,
    StaleReview,
    assignment_defer,
    review_reopen,
    review_save,
    review_submit,
)
from tests import factories

COMPLETE = {
    "overall": 4,
    "recommendation": "revise",
    "importance": "3",
    "advance_over_known_work": protocol.CANT_JUDGE,
    "plausible_evidence_bounded": "2",
    "data_fit": "4",
    "alternative_explanations": "1",
    "informative_results": "3",
    "flaw_verdict": "fixable",
    "flaw_checklist": ["confounding", "power"],
    "main_flaw": "Too few animals per arm.",
    "comments": "Worth a pilot.",
}


@pytest.fixture
def assignment(reviewer):
    proposal = factories.make_proposal()
    cohort = factories.make_cohort([proposal], status=Cohort.Status.OPEN)
    return factories.make_assignment(cohort, reviewer, proposal)


def test_first_save_creates_the_draft_at_version_one(assignment, reviewer):
    review = review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 3}, version=0)
    review.refresh_from_db()
    assert (review.status, review.version, review.overall) == (Review.Status.DRAFT, 1, 3)


def test_save_keeps_answers_it_was_not_given(assignment, reviewer):
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 3, "comments": "first"}, version=0)
    review = review_save(assignment=assignment, reviewer=reviewer, answers={"recommendation": "defer"}, version=1)
    review.refresh_from_db()
    assert (review.overall, review.recommendation, review.comments, review.version) == (3, "defer", "first", 2)


def test_cant_judge_is_stored_as_the_literal(assignment, reviewer):
    review_save(assignment=assignment, reviewer=reviewer, answers={"data_fit": "cant_judge"}, version=0)
    stored = Review.objects.values_list("data_fit", flat=True).get(assignment=assignment)
    assert stored == "cant_judge"


@pytest.mark.parametrize(
    "field, value",
    [
        ("overall", "6"),
        ("overall", "0"),
        ("overall", "three"),
        ("recommendation", "accept"),
        ("importance", "5"),
        ("importance", "0"),
        ("flaw_verdict", "minor"),
        ("flaw_checklist", ["power", "astrology"]),
        ("author", "someone"),
    ],
)
def test_out_of_scale_values_are_rejected_with_a_clear_error(assignment, reviewer, field, value):
    with pytest.raises(ReviewInvalid) as raised:
        validated_answers({field: value}, assignment=assignment, reviewer=reviewer)
    assert field in raised.value.errors
    assert raised.value.errors[field].strip()
    assert not Review.objects.filter(assignment=assignment).exists()


def test_an_out_of_scale_value_names_the_scale(assignment, reviewer):
    with pytest.raises(ReviewInvalid) as raised:
        validated_answers({"importance": "7"}, assignment=assignment, reviewer=reviewer)
    assert raised.value.errors["importance"] == "Importance must be 1, 2, 3, 4 or 'cant_judge', not '7'."


def test_a_save_from_an_outdated_version_is_refused_and_changes_nothing(assignment, reviewer):
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0)
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 3}, version=1)
    with pytest.raises(StaleReview):
        review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 5}, version=1)
    review = Review.objects.get(assignment=assignment)
    assert (review.overall, review.version) == (3, 2)


def test_saving_what_is_already_stored_from_an_outdated_version_is_harmless(assignment, reviewer):
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 2, "comments": "kept"}, version=0)
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 3}, version=1)
    review = review_save(
        assignment=assignment, reviewer=reviewer, answers={"overall": 3, "comments": "kept"}, version=1
    )
    assert review.version == 2
    assert Review.objects.get(assignment=assignment).version == 2


def test_a_tabs_own_late_save_neither_fails_nor_overwrites_its_newer_answers(assignment, reviewer):
    """A save sent as the page reloaded arrives after the reloaded page saved newer answers: nothing changes."""
    tab = "tab-1"
    review_save(
        assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0, sender=SaveSender(tab, 100)
    )
    review_save(
        assignment=assignment, reviewer=reviewer, answers={"overall": 4}, version=1, sender=SaveSender(tab, 300)
    )
    late = review_save(
        assignment=assignment, reviewer=reviewer, answers={"overall": 3}, version=1, sender=SaveSender(tab, 200)
    )
    assert (late.overall, late.version) == (4, 2)
    assert Review.objects.get(assignment=assignment).overall == 4


def test_a_tabs_newer_answers_win_over_its_own_save_that_crossed_them(assignment, reviewer):
    """The reloaded page saves from the version it loaded, after the previous page's save got in: its answers win."""
    tab = "tab-1"
    review_save(
        assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0, sender=SaveSender(tab, 100)
    )
    review_save(
        assignment=assignment, reviewer=reviewer, answers={"overall": 3}, version=1, sender=SaveSender(tab, 200)
    )
    newer = review_save(
        assignment=assignment,
        reviewer=reviewer,
        answers={"overall": 3, "comments": "typed before the reload"},
        version=1,
        sender=SaveSender(tab, 250),
    )
    assert (newer.comments, newer.version) == ("typed before the reload", 3)


def test_another_tabs_change_still_makes_a_save_stale(assignment, reviewer):
    review_save(
        assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0, sender=SaveSender("a", 100)
    )
    review_save(
        assignment=assignment, reviewer=reviewer, answers={"overall": 3}, version=1, sender=SaveSender("a", 200)
    )
    with pytest.raises(StaleReview):
        review_save(
            assignment=assignment, reviewer=reviewer, answers={"overall": 5}, version=1, sender=SaveSender("b", 900)
        )
    assert Review.objects.get(assignment=assignment).overall == 3


def test_two_first_saves_from_two_tabs_do_not_both_win(assignment, reviewer):
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0)
    with pytest.raises(StaleReview):
        review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 5}, version=0)
    assert Review.objects.get(assignment=assignment).overall == 2


def test_submit_locks_a_complete_review(assignment, reviewer):
    review = review_submit(assignment=assignment, reviewer=reviewer, answers=COMPLETE, version=0)
    review.refresh_from_db()
    assert review.status == Review.Status.SUBMITTED
    assert review.submitted_at is not None
    assert review.advance_over_known_work == "cant_judge"
    assert review.flaw_checklist == ["confounding", "power"]


def test_incomplete_submit_names_each_missing_question_and_keeps_the_draft(assignment, reviewer):
    data = {key: COMPLETE[key] for key in ("overall", "importance", "comments")}
    with pytest.raises(ReviewIncomplete) as raised:
        review_submit(assignment=assignment, reviewer=reviewer, answers=data, version=0)
    missing = set(protocol.CRITERION_FIELDS) - {"importance"} | {"recommendation", "flaw_verdict"}
    assert set(raised.value.errors) == missing
    review = Review.objects.get(assignment=assignment)
    assert (review.status, review.overall, review.comments) == (Review.Status.DRAFT, 4, "Worth a pilot.")
    assert raised.value.review.version == review.version == 1


def test_cant_judge_counts_as_an_answer_for_submission(assignment, reviewer):
    data = COMPLETE | dict.fromkeys(protocol.CRITERION_FIELDS, protocol.CANT_JUDGE) | {"flaw_verdict": "cant_judge"}
    review = review_submit(assignment=assignment, reviewer=reviewer, answers=data, version=0)
    assert review.status == Review.Status.SUBMITTED


def test_a_submitted_review_cannot_be_saved_again(assignment, reviewer):
    review = review_submit(assignment=assignment, reviewer=reviewer, answers=COMPLETE, version=0)
    with pytest.raises(ReviewLocked):
        review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 1}, version=review.version)
    assert Review.objects.get(assignment=assignment).overall == 4


def test_reviews_in_a_closed_cohort_cannot_be_changed(assignment, reviewer):
    Cohort.objects.filter(pk=assignment.cohort_id).update(status=Cohort.Status.CLOSED)
    assignment.refresh_from_db()
    with pytest.raises(ReviewLocked):
        review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 1}, version=0)


def test_a_closed_cohort_is_refused_before_the_values_of_the_write(assignment, reviewer, other_reviewer):
    """The state refuses first: values out of the scales in a closed cohort, or in someone else's review, are answered
    with that refusal, as a valid write would be."""
    with pytest.raises(ServiceError) as refused:
        validated_answers({"overall": "9"}, assignment=assignment, reviewer=other_reviewer)
    assert refused.value.code == "forbidden"
    with pytest.raises(ServiceError) as refused:
        validated_defer_reason({"deferred_reason": ""}, assignment=assignment, reviewer=other_reviewer)
    assert refused.value.code == "forbidden"
    Cohort.objects.filter(pk=assignment.cohort_id).update(status=Cohort.Status.CLOSED)
    assignment.refresh_from_db()
    with pytest.raises(ReviewLocked):
        validated_answers({"overall": "9", "importance": "x"}, assignment=assignment, reviewer=reviewer)
    with pytest.raises(ReviewLocked):
        validated_defer_reason({"deferred_reason": "\x00"}, assignment=assignment, reviewer=reviewer)


def test_posted_answers_are_typed_as_the_review_records_them(assignment, reviewer):
    posted = {
        "overall": "3",
        "recommendation": "",
        "importance": "2",
        "data_fit": protocol.CANT_JUDGE,
        "flaw_checklist": ["confounding", "power"],
        "comments": None,
    }
    assert validated_answers(posted, assignment=assignment, reviewer=reviewer) == {
        "overall": 3,
        "recommendation": "",
        "importance": "2",
        "data_fit": protocol.CANT_JUDGE,
        "flaw_checklist": ["confounding", "power"],
        "comments": "",
    }
    assert validated_answers({"overall": ""}, assignment=assignment, reviewer=reviewer) == {"overall": None}


def test_every_refused_question_is_named_in_the_order_sent(assignment, reviewer):
    with pytest.raises(ReviewInvalid) as raised:
        validated_answers(
            {"flaw_verdict": "minor", "overall": "6", "author": "x"}, assignment=assignment, reviewer=reviewer
        )
    assert list(raised.value.errors) == ["flaw_verdict", "overall", "author"]
    assert raised.value.errors["author"] == "'author' is not a question of the review form."


def test_only_the_assigned_reviewer_can_write(assignment, other_reviewer):
    with pytest.raises(ServiceError) as refused:
        review_save(assignment=assignment, reviewer=other_reviewer, answers={"overall": 1}, version=0)
    assert (refused.value.code, refused.value.status) == ("forbidden", 403)


def test_the_checklist_is_cleared_when_no_flaw_is_declared(assignment, reviewer):
    review_save(
        assignment=assignment,
        reviewer=reviewer,
        answers={"flaw_verdict": "fatal", "flaw_checklist": ["power"]},
        version=0,
    )
    review = review_save(assignment=assignment, reviewer=reviewer, answers={"flaw_verdict": "absent"}, version=1)
    review.refresh_from_db()
    assert review.flaw_checklist == []


def test_a_coordinator_reopens_a_submitted_review_and_it_is_audited(assignment, reviewer, coordinator):
    review = review_submit(assignment=assignment, reviewer=reviewer, answers=COMPLETE, version=0)
    review = review_reopen(review=review, user=coordinator)
    assert (review.status, review.submitted_at) == (Review.Status.DRAFT, None)
    event = AuditEvent.objects.get(action="review_reopened")
    assert (event.actor, event.target_type, event.target_id) == (coordinator, "review", str(review.pk))
    # The reviewer can change it again, from the reopened version.
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 5}, version=review.version)


@pytest.mark.parametrize("role", ["reviewer", "analyst"])
def test_only_coordinators_reopen(assignment, reviewer, role):
    review = review_submit(assignment=assignment, reviewer=reviewer, answers=COMPLETE, version=0)
    with pytest.raises(ServiceError) as refused:
        review_reopen(review=review, user=factories.make_user(role))
    assert (refused.value.code, refused.value.status) == ("forbidden", 403)
    assert Review.objects.get(pk=review.pk).status == Review.Status.SUBMITTED
    assert not AuditEvent.objects.exists()


def test_reopening_a_draft_is_refused(assignment, reviewer, coordinator):
    review = review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0)
    with pytest.raises(ReviewNotSubmitted):
        review_reopen(review=review, user=coordinator)


def test_defer_records_the_reason_for_the_coordinator(assignment, reviewer):
    reason = validated_defer_reason(
        {"deferred_reason": "  I co-wrote the cited study.  "}, assignment=assignment, reviewer=reviewer
    )
    assignment_defer(assignment=assignment, reviewer=reviewer, reason=reason)
    assignment.refresh_from_db()
    assert assignment.deferred_reason == "I co-wrote the cited study."
    assert assignment.deferred_at is not None


def test_defer_needs_a_reason(assignment, reviewer):
    with pytest.raises(ReviewInvalid):
        validated_defer_reason({"deferred_reason": "   "}, assignment=assignment, reviewer=reviewer)
    assignment.refresh_from_db()
    assert assignment.deferred_at is None


@pytest.mark.parametrize("character", ["\x00", "\x1b", "\x7f"])
@pytest.mark.parametrize("field", ["main_flaw", "comments"])
def test_a_control_character_in_review_text_is_refused_on_every_database(assignment, reviewer, field, character):
    """PostgreSQL cannot store a NUL (a server error there, stored on SQLite): refused with the field named, on both,
    and nothing of that save is written."""
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 3, field: "kept"}, version=0)
    with pytest.raises(ReviewInvalid) as raised:
        validated_answers({"overall": "4", field: f"ab{character}c"}, assignment=assignment, reviewer=reviewer)
    label = "The main flaw" if field == "main_flaw" else "Comments"
    assert raised.value.errors == {
        field: f"{label} holds the control character U+{ord(character):04X} at character 3; remove it (only tab and "
        "line breaks are allowed)."
    }
    review = Review.objects.get(assignment=assignment)
    assert (review.overall, getattr(review, field), review.version) == (3, "kept", 1)
    with pytest.raises(ReviewInvalid):
        validated_answers({**COMPLETE, field: character}, assignment=assignment, reviewer=reviewer)
    assert Review.objects.get(assignment=assignment).status == Review.Status.DRAFT


def test_tabs_and_line_breaks_in_review_text_are_kept(assignment, reviewer):
    text = "First point:\tpower.\r\nSecond point:\nconfounding."
    review_save(assignment=assignment, reviewer=reviewer, answers={"comments": text}, version=0)
    assert Review.objects.get(assignment=assignment).comments == text


def test_a_control_character_in_the_reason_for_skipping_is_refused(assignment, reviewer):
    with pytest.raises(ReviewInvalid) as raised:
        validated_defer_reason({"deferred_reason": "I know\x00 the authors."}, assignment=assignment, reviewer=reviewer)
    assert raised.value.errors["deferred_reason"].startswith("The reason holds the control character U+0000")
    assignment.refresh_from_db()
    assert (assignment.deferred_reason, assignment.deferred_at) == ("", None)


def test_a_submitted_review_cannot_be_deferred(assignment, reviewer):
    review_submit(assignment=assignment, reviewer=reviewer, answers=COMPLETE, version=0)
    with pytest.raises(ReviewLocked):
        assignment_defer(assignment=assignment, reviewer=reviewer, reason="changed my mind")


def _age_last_save(assignment, seconds):
    review = Review.objects.get(assignment=assignment)
    Review.objects.filter(pk=review.pk).update(last_saved_at=review.last_saved_at - timedelta(seconds=seconds))


def test_time_between_saves_is_counted(assignment, reviewer):
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0)
    _age_last_save(assignment, 90)
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 3}, version=1)
    assert 90 <= Review.objects.get(assignment=assignment).seconds_spent <= 92


def test_idle_time_is_counted_at_most_five_minutes_per_gap(assignment, reviewer):
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0)
    _age_last_save(assignment, 3 * 3600)
    review = review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 3}, version=1)
    assert review.seconds_spent == MAX_COUNTED_GAP_SECONDS
    assert Review.objects.get(assignment=assignment).seconds_spent == MAX_COUNTED_GAP_SECONDS


def test_the_first_save_counts_the_reading_time_since_the_page_opened(assignment, reviewer):
    opened_at = timezone.now() - timedelta(seconds=120)
    review_save(assignment=assignment, reviewer=reviewer, answers={"overall": 2}, version=0, opened_at=opened_at)
    assert 120 <= Review.objects.get(assignment=assignment).seconds_spent <= 122
