"""Cutoff arithmetic at day, month and year precision (docs/protocol.md#cutoffs-and-later-literature): the pure rule,
and the same rule as retrieval applies it to the corpus and as the audit counts "date too coarse"."""

import hashlib
from datetime import date

import pytest

from literature import retrieval
from literature.models import Reference
from reviewapp.inspiration.cutoffs import Cutoff, within_window
from reviewapp.inspiration.selectors import coarse_references

DAY_CUTOFF = Cutoff.parse("2026-05-14")
MONTH_CUTOFF = Cutoff.parse("2026-05")

# (published, precision) → (later than the day cutoff, too coarse for it, later than the month cutoff, too coarse)
CASES = [
    ((date(2026, 5, 14), "day"), (False, False, False, False)),  # on the cutoff day
    ((date(2026, 5, 15), "day"), (True, False, False, False)),  # the first day after the day cutoff
    ((date(2026, 5, 31), "day"), (True, False, False, False)),  # the last day of the cutoff month
    ((date(2026, 6, 1), "day"), (True, False, True, False)),  # the first day after the month cutoff
    ((date(2026, 5, 1), "month"), (False, True, False, False)),  # the cutoff's own month
    ((date(2026, 6, 1), "month"), (True, False, True, False)),
    ((date(2026, 4, 1), "month"), (False, False, False, False)),
    ((date(2026, 1, 1), "year"), (False, True, False, True)),  # the cutoff's year: too coarse for both
    ((date(2027, 1, 1), "year"), (True, False, True, False)),  # the whole year after
    ((date(2025, 1, 1), "year"), (False, False, False, False)),
    ((None, ""), (False, False, False, False)),  # undated: never later
]


def test_a_cutoff_is_a_day_or_a_month_with_its_last_day():
    assert (DAY_CUTOFF.day, DAY_CUTOFF.precision, DAY_CUTOFF.last_day) == (date(2026, 5, 14), "day", date(2026, 5, 14))
    assert (MONTH_CUTOFF.day, MONTH_CUTOFF.precision, MONTH_CUTOFF.last_day) == (
        date(2026, 5, 1),
        "month",
        date(2026, 5, 31),
    )
    assert Cutoff.parse("2028-02").last_day == date(2028, 2, 29)
    assert (DAY_CUTOFF.text, MONTH_CUTOFF.text) == ("2026-05-14", "2026-05")


@pytest.mark.parametrize("text", ["2026-13", "2026/05", "2026-02-30", "May 2026", "2026", "26-05-14"])
def test_what_is_not_a_day_or_a_month_is_refused(text):
    with pytest.raises(ValueError):
        Cutoff.parse(text)


@pytest.mark.parametrize(("reference", "expected"), CASES)
def test_later_literature_and_date_too_coarse(reference, expected):
    published, precision = reference
    assert (
        DAY_CUTOFF.is_later(published, precision),
        DAY_CUTOFF.is_too_coarse(published, precision),
        MONTH_CUTOFF.is_later(published, precision),
        MONTH_CUTOFF.is_too_coarse(published, precision),
    ) == expected


def test_a_year_is_not_too_coarse_for_a_cutoff_at_its_end():
    december = Cutoff.parse("2026-12")
    assert not december.is_too_coarse(date(2026, 1, 1), "year")
    assert not december.is_later(date(2026, 1, 1), "year")
    assert december.is_later(date(2027, 1, 1), "year")


@pytest.mark.django_db
def test_retrieval_and_the_coarse_count_apply_the_same_rule_to_the_corpus():
    """Every case above as a reference about one shared topic: a search after each cutoff finds exactly the later
    ones, and the coarse count finds exactly the too coarse ones."""
    ids = {}
    for number, ((published, precision), _) in enumerate(CASES):
        reference = Reference.objects.create(
            source="csv",
            source_id=f"case-{number}",
            title=f"Velqorin tranvide drumlet case {number}",
            abstract="Velqorin tranvide drumlet.",
            published=published,
            published_precision=precision,
            content_sha256=hashlib.sha256(str(number).encode()).hexdigest(),
        )
        ids[reference.pk] = number

    for cutoff, later_column, coarse_column in ((DAY_CUTOFF, 0, 1), (MONTH_CUTOFF, 2, 3)):
        found = retrieval.search("velqorin tranvide drumlet", limit=50, published_after=cutoff.last_day)
        assert sorted(ids[c.reference_id] for c in found) == [n for n, (_, e) in enumerate(CASES) if e[later_column]]
        coarse = Reference.objects.filter(coarse_references(cutoff, None))
        assert sorted(ids[r.pk] for r in coarse) == [n for n, (_, e) in enumerate(CASES) if e[coarse_column]]

    # A window end keeps what starts on or before it.
    found = retrieval.search(
        "velqorin tranvide drumlet", limit=50, published_after=DAY_CUTOFF.last_day, published_until=date(2026, 6, 1)
    )
    assert sorted(ids[c.reference_id] for c in found) == [1, 2, 3, 5]


def test_a_window_start_is_a_further_bound_with_the_cutoffs_rule():
    """Worked by hand: a window starting 2026-06-15 moves both cutoffs' bound to 2026-06-14; one starting on the day
    after a cutoff, or earlier, leaves the cutoff as it is."""
    bound = within_window(DAY_CUTOFF, date(2026, 6, 15))
    assert (bound.last_day, bound.precision) == (date(2026, 6, 14), "day")
    assert within_window(MONTH_CUTOFF, date(2026, 6, 15)).last_day == date(2026, 6, 14)
    assert within_window(DAY_CUTOFF, date(2026, 5, 15)) == DAY_CUTOFF  # the day after the cutoff: nothing changes
    assert within_window(MONTH_CUTOFF, date(2026, 6, 1)) == MONTH_CUTOFF
    assert within_window(DAY_CUTOFF, date(2025, 4, 1)) == DAY_CUTOFF
    assert within_window(DAY_CUTOFF, None) == DAY_CUTOFF
    # The period holding the window's first day without ending before it is too coarse: June 2026 and the year 2026;
    # a reference of the start day itself is later, one of the day before is not.
    assert bound.is_too_coarse(date(2026, 6, 1), "month") and bound.is_too_coarse(date(2026, 1, 1), "year")
    assert bound.is_later(date(2026, 6, 15), "day") and not bound.is_later(date(2026, 6, 14), "day")
    assert not bound.is_too_coarse(date(2026, 5, 1), "month")  # May ends before the window: simply earlier
    assert bound.coarse_periods() == [("month", date(2026, 6, 1)), ("year", date(2026, 1, 1))]
