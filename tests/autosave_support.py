"""A reviewer autosaving in another thread while a test's long write holds SQLite's one write lock."""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.db import connection

from reviewapp.services.reviews import review_save


@dataclass
class Autosaves:
    """Each autosave's start and end (monotonic seconds); `watching` is set by the test while its write goes on."""

    saves: list[tuple[float, float]] = field(default_factory=list)
    watching: threading.Event = field(default_factory=threading.Event)

    def longest(self) -> float:
        return max(finished - begun for begun, finished in self.saves)

    def within(self, started: float, ended: float) -> list[float]:
        return [finished for begun, finished in self.saves if started <= begun and finished <= ended]


@contextmanager
def reviewer_autosaving(*, assignment, reviewer, observe: Callable[[], None]) -> Iterator[Autosaves]:
    """Saves the assignment's review every 0.1 s, a reviewer's pace, until the block ends; after each save made while
    `watching` is set, `observe` records what the reviewer could see then."""
    autosaves = Autosaves()
    done = threading.Event()

    def autosaving():
        try:
            version = 0
            while not done.is_set():
                started = time.monotonic()
                answers = {"overall": 1 + len(autosaves.saves) % 5}
                version = review_save(
                    assignment=assignment, reviewer=reviewer, answers=answers, version=version
                ).version
                autosaves.saves.append((started, time.monotonic()))
                if autosaves.watching.is_set():
                    observe()
                time.sleep(0.1)  # the pace of a reviewer's autosaves
        finally:
            connection.close()

    thread = threading.Thread(target=autosaving)
    thread.start()
    try:
        yield autosaves
    finally:
        done.set()
        thread.join(60)
