"""What the literature room lets the rooms above it add, without importing them
(docs/architecture.md#hooks-how-a-lower-room-hands-work-to-a-higher-one).

`reference_uses_register(reader)`: reader(reference_ids) → {reference id: [ReferenceUse]}, the records of a higher
room that used those references (the inspiration audit registers its items). The corpus pages list them beside the
novelty checks, which this room reads itself.

`task_group_register(kind, TaskGroupKind)`: groups of research tasks (the review room's cohorts, registered by this
room; the benchmark room's sets) whose tasks' source publications anchor a citation wave.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceUse:
    kind: str  # e.g. "Novelty check", "Inspiration audit"
    label: str  # what used it, for people
    url: str  # its page ("" when there is none)
    detail: str  # how it was used


UsesReader = Callable[[Iterable[int]], dict[int, list[ReferenceUse]]]
_READERS: list[UsesReader] = []


def reference_uses_register(reader: UsesReader) -> None:
    if reader not in _READERS:
        _READERS.append(reader)


def registered_uses(reference_ids: Iterable[int]) -> dict[int, list[ReferenceUse]]:
    ids = list(reference_ids)
    found: dict[int, list[ReferenceUse]] = {}
    for reader in _READERS:
        for reference_id, uses in reader(ids).items():
            found.setdefault(reference_id, []).extend(uses)
    return found


@dataclass(frozen=True)
class TaskGroup:
    """Research tasks read together (a cohort's, a benchmark set's): their name and each task's key with its
    source publications as imported (reviewapp.models.ResearchTask.sources)."""

    name: str
    tasks: list[tuple[str, list[str]]]


@dataclass(frozen=True)
class TaskGroupKind:
    label: str  # for people, e.g. "Benchmark set"
    read: Callable[[int], TaskGroup | None]  # the group of that id, None when there is none
    choices: Callable[[], list[tuple[int, str]]]  # (id, name) of the groups there are, for a page's list


_TASK_GROUPS: dict[str, TaskGroupKind] = {}


def task_group_register(kind: str, group: TaskGroupKind) -> None:
    """`task_group_register("benchmark", …)`: a room above this one names its groups of tasks, whose source
    publications a citation wave can start from (literature.waves.citation_wave_start_from_tasks)."""
    _TASK_GROUPS[kind] = group


def task_group_kinds() -> dict[str, TaskGroupKind]:
    return dict(_TASK_GROUPS)
