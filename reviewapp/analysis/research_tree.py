"""The research tree of a cohort read as the protocol reads it (docs/protocol.md#research-runs): runs as connected
components when the import names none, one development path per terminal version, every parent→child edge a
transition, and the starting grouping of contribution families.

Pure functions of plain values (versions by their imported id), no database. Identifiers are compared as text (the
imported id's string order), never by the order parents were listed or rows were stored.
"""

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Version:
    """One hypothesis version as the tree reads it: parents in their listed order (ids outside the cohort included)."""

    id: str
    task: str
    author: str
    run: str  # the research run the import named; "" when none was named
    parents: tuple[str, ...]


@dataclass(frozen=True)
class Path:
    """A development path: versions from a root to a terminal, and the other parents of its versions (context)."""

    run: str
    terminal: str
    proposals: tuple[str, ...]  # root → terminal
    context: tuple[str, ...]


class _Components:
    """Union–find over ids; each component is named by its smallest id (string order)."""

    def __init__(self, ids: Iterable[str]):
        self.parent = {id_: id_ for id_ in ids}

    def find(self, id_: str) -> str:
        root = id_
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[id_] != root:
            self.parent[id_], id_ = root, self.parent[id_]
        return root

    def join(self, a: str, b: str) -> None:
        first, second = self.find(a), self.find(b)
        if first != second:
            # The smaller id stays the root, so the root is the component's name.
            low, high = sorted((first, second))
            self.parent[high] = low

    def groups(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = defaultdict(list)
        for id_ in sorted(self.parent):
            found[self.find(id_)].append(id_)
        return dict(found)


def run_of(versions: Iterable[Version]) -> dict[str, str]:
    """Each version's research run: the run the import named, otherwise the connected component of the parent graph
    among the versions of the same task and author that name no run, named by its smallest id."""
    versions = list(versions)
    unnamed = {version.id: version for version in versions if not version.run}
    components = _Components(unnamed)
    for version in unnamed.values():
        for parent_id in version.parents:
            parent = unnamed.get(parent_id)
            if parent is not None and (parent.task, parent.author) == (version.task, version.author):
                components.join(version.id, parent_id)
    return {version.id: version.run or components.find(version.id) for version in versions}


def edges(versions: Iterable[Version]) -> list[tuple[str, str]]:
    """Every (parent, child) pair of the versions, a crossover's other parents included: the transitions. A parent
    outside the cohort still makes a transition (an actual parent–child pair)."""
    return sorted((parent, version.id) for version in versions for parent in version.parents)


def select_paths(versions: Iterable[Version], runs: Mapping[str, str]) -> list[Path]:
    """One longest-depth path to each terminal version (no children among the versions), walking back at each step to
    the parent of the same run that starts the longest chain back to a root, ties to the smallest id; single-version
    paths are left out. The path's versions' other parents (of another run or off the path) are its context."""
    by_id = {version.id: version for version in versions}
    has_children = {parent for version in by_id.values() for parent in version.parents if parent in by_id}

    def walkable(version: Version) -> list[str]:
        return [parent for parent in version.parents if parent in by_id and runs[parent] == runs[version.id]]

    depth: dict[str, int] = {}

    def depth_of(start: str) -> int:
        # Iterative (a long chain must not exhaust Python's recursion limit): versions are settled parents first.
        stack = [start]
        while stack:
            current = stack[-1]
            if current in depth:
                stack.pop()
                continue
            waiting = [parent for parent in walkable(by_id[current]) if parent not in depth]
            if waiting:
                stack.extend(waiting)
                continue
            depth[current] = 1 + max((depth[parent] for parent in walkable(by_id[current])), default=0)
            stack.pop()
        return depth[start]

    paths = []
    for terminal in sorted(id_ for id_ in by_id if id_ not in has_children):
        chain = [terminal]
        while parents := walkable(by_id[chain[-1]]):
            chain.append(min(parents, key=lambda parent: (-depth_of(parent), parent)))
        if len(chain) < 2:
            continue
        on_path = set(chain)
        context = sorted(
            {parent for id_ in chain for parent in by_id[id_].parents if parent not in on_path and parent in by_id}
        )
        paths.append(Path(runs[terminal], terminal, tuple(reversed(chain)), tuple(context)))
    return paths


_SPACE = re.compile(r"\s+")


def normalised_statement(statement: str) -> str:
    """A statement with its whitespace collapsed and its case folded: what counts as an exact duplicate."""
    return _SPACE.sub(" ", statement).strip().casefold()


def family_groups(versions: Iterable[Version], statements: Mapping[str, str]) -> list[list[str]]:
    """The starting grouping of contribution families: versions joined by ancestry (across the runs of the cohort) and
    by exact duplicate statements; groups in the order of their smallest id, each sorted."""
    versions = list(versions)
    components = _Components(version.id for version in versions)
    for version in versions:
        for parent in version.parents:
            if parent in components.parent:
                components.join(version.id, parent)
    first_with: dict[str, str] = {}
    for version in versions:
        text = normalised_statement(statements.get(version.id, ""))
        if text:
            components.join(version.id, first_with.setdefault(text, version.id))
    return sorted(components.groups().values())


def runs_of_versions(versions: Sequence[Version]) -> dict[str, list[str]]:
    """run → its versions' ids (sorted)."""
    runs = run_of(versions)
    grouped: dict[str, list[str]] = defaultdict(list)
    for id_ in sorted(runs):
        grouped[runs[id_]].append(id_)
    return dict(grouped)
