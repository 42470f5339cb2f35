"""Cutoff arithmetic (docs/protocol.md#cutoffs-and-later-literature): pure functions, no database.

A group's operational cutoff is a day ("2026-05-14") or a month ("2026-05"). Later literature is what was published
strictly after it: after the day, or from the first day of the next month. So every cutoff has a last day it covers
(`last_day`), and a reference is later when the first day of its publication period is after that day. A reference
dated only by a month or a year stands for every day of it: when its period holds the cutoff's last day without
ending on it, part of the period is before the cutoff and part after, and the reference is "date too coarse": left
out of later literature and counted.

A publication window's first day (`window_start`) is one more such bound: later literature of a group starts on the day
after its cutoff or on the window's first day, whichever is later (`within_window`), with the same rule for a coarse
date.
"""

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta

DAY, MONTH, YEAR = "day", "month", "year"
_CUTOFF = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")


def month_end(day: date) -> date:
    return date(day.year, day.month, calendar.monthrange(day.year, day.month)[1])


def period_end(published: date, precision: str) -> date:
    """The last day a publication date may mean: the day itself, its month's or its year's last day."""
    if precision == YEAR:
        return date(published.year, 12, 31)
    if precision == MONTH:
        return month_end(published)
    return published


@dataclass(frozen=True)
class Cutoff:
    day: date  # the day, or the first day of the month
    precision: str  # DAY or MONTH

    @classmethod
    def parse(cls, text: str) -> "Cutoff":
        """From "2026-05-14" (a day) or "2026-05" (a month); ValueError says why not."""
        match = _CUTOFF.match(text.strip())
        if match is None:
            raise ValueError(f"“{text}” is not a day like 2026-05-14 or a month like 2026-05")
        year, month, day = match.groups()
        try:
            parsed = date(int(year), int(month), int(day or 1))
        except ValueError:
            raise ValueError(f"“{text}” is not a date on the calendar") from None
        return cls(parsed, DAY if day else MONTH)

    @property
    def text(self) -> str:
        return self.day.isoformat() if self.precision == DAY else self.day.strftime("%Y-%m")

    @property
    def last_day(self) -> date:
        """The last day the cutoff covers: later literature starts the day after."""
        return self.day if self.precision == DAY else month_end(self.day)

    def is_later(self, published: date | None, precision: str) -> bool:
        """The reference's whole publication period is after the cutoff (an undated one never is)."""
        return published is not None and published > self.last_day

    def is_too_coarse(self, published: date | None, precision: str) -> bool:
        """The reference's period holds the cutoff's last day and goes on after it: neither before nor after."""
        if published is None:
            return False
        return published <= self.last_day < period_end(published, precision)

    def coarse_periods(self) -> list[tuple[str, date]]:
        """(precision, first day) of the periods that are too coarse for this cutoff: at most its month and its
        year (a period ending on the cutoff's last day is simply before it)."""
        last = self.last_day
        periods = []
        if last != month_end(last):
            periods.append((MONTH, date(last.year, last.month, 1)))
        if last != date(last.year, 12, 31):
            periods.append((YEAR, date(last.year, 1, 1)))
        return periods


def within_window(cutoff: Cutoff, window_start: date | None) -> Cutoff:
    """The bound later literature must pass for a group when the publication window starts on `window_start`: the
    cutoff itself, or, when the window starts later than the day after the cutoff, the day before the window's
    first day (so a reference of that day is later, and one whose period straddles it is "date too coarse")."""
    if window_start is None or window_start - timedelta(days=1) <= cutoff.last_day:
        return cutoff
    return Cutoff(window_start - timedelta(days=1), DAY)
