"""What the literature room lets the rooms above it add, without importing them
(docs/architecture.md#hooks-how-a-lower-room-hands-work-to-a-higher-one).

`reference_uses_register(reader)`: reader(reference_ids) → {reference id: [ReferenceUse]}, the records of a higher
room that used those references (the inspiration audit registers its items). The corpus pages list them beside the
novelty checks, which this room reads itself.
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
