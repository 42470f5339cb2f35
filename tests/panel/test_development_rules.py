"""The rules of the levels above a single hypothesis: runs, development paths, transitions, families and composites
(docs/protocol.md#research-runs)."""

import pytest

from reviewapp.analysis.research_tree import Version, edges, family_groups, run_of, select_paths
from reviewapp.panel import development as rules
from reviewapp.panel.profile import INAPPLICABLE, UNKNOWN


def tree(spec: dict[str, tuple[str, ...]], *, run="", task="T", author="A") -> list[Version]:
    return [Version(id_, task, author, run, parents) for id_, parents in spec.items()]


def paths_of(versions):
    return select_paths(versions, run_of(versions))


# Development paths ---------------------------------------------------------------------------------------------


def test_path_walks_back_to_the_parent_with_the_longest_chain_at_a_crossover():
    # r1 → a → b → x is three deep, r2 → x one: the crossover x's path follows b; r2 is context.
    versions = tree({"r1": (), "a": ("r1",), "b": ("a",), "r2": (), "x": ("r2", "b")})
    [path] = paths_of(versions)
    assert path.terminal == "x"
    assert path.proposals == ("r1", "a", "b", "x")
    assert path.context == ("r2",)


def test_equal_depth_parents_go_to_the_smallest_identifier_not_the_first_listed():
    # x lists "p9" first; both parents are one step from a root: the tie goes to "p10" (string order).
    versions = tree({"root": (), "p9": ("root",), "p10": ("root",), "x": ("p9", "p10")})
    [path] = paths_of(versions)
    assert path.proposals == ("root", "p10", "x")
    assert path.context == ("p9",)


def test_identifier_ties_use_string_order_not_numeric_order():
    versions = tree({"2": (), "10": (), "x": ("2", "10")})
    [path] = paths_of(versions)
    assert path.proposals == ("10", "x")


def test_single_versions_make_no_path_and_every_terminal_gets_one():
    versions = tree({"lonely": (), "r": (), "a": ("r",), "b": ("r",)})
    paths = paths_of(versions)
    assert [path.terminal for path in paths] == ["a", "b"]
    assert all(len(path.proposals) == 2 for path in paths)


def test_a_long_chain_needs_no_recursion():
    spec = {"v00000": ()} | {f"v{n:05d}": (f"v{n - 1:05d}",) for n in range(1, 5000)}
    [path] = paths_of(tree(spec))
    assert len(path.proposals) == 5000


def test_paths_stay_in_their_run_and_other_runs_parents_are_context():
    versions = [
        Version("a1", "T", "A", "run-a", ()),
        Version("a2", "T", "A", "run-a", ("a1",)),
        Version("b1", "T", "A", "run-b", ("a2",)),
        Version("b2", "T", "A", "run-b", ("b1",)),
    ]
    [path] = paths_of(versions)
    assert (path.run, path.proposals, path.context) == ("run-b", ("b1", "b2"), ("a2",))


# Runs ------------------------------------------------------------------------------------------------------------


def test_runs_without_names_are_components_of_one_task_and_author_named_by_the_smallest_id():
    versions = [
        Version("p3", "T", "A", "", ()),
        Version("p12", "T", "A", "", ("p3",)),
        Version("p4", "T", "B", "", ("p3",)),  # another author: its own run
        Version("p5", "T", "A", "", ()),
        Version("p6", "T", "A", "named", ("p5",)),
    ]
    assert run_of(versions) == {"p3": "p12", "p12": "p12", "p4": "p4", "p5": "p5", "p6": "named"}


# Transitions ---------------------------------------------------------------------------------------------------


def test_every_parent_child_edge_is_a_transition_crossovers_included():
    versions = tree({"r1": (), "r2": (), "x": ("r1", "r2"), "y": ("x",), "z": ("outside",)})
    assert edges(versions) == [("outside", "z"), ("r1", "x"), ("r2", "x"), ("x", "y")]


# Families ------------------------------------------------------------------------------------------------------


def test_families_join_ancestry_across_runs_and_exact_duplicate_statements():
    versions = [
        Version("a", "T", "A", "run-1", ()),
        Version("b", "T", "A", "run-2", ("a",)),
        Version("c", "T", "B", "", ()),
        Version("d", "T", "C", "", ()),
        Version("e", "T", "C", "", ()),
    ]
    statements = {
        "a": "X.",
        "b": "Y.",
        "c": "Raising  IGF-1 extends lifespan.",
        "d": "raising igf-1 extends\nlifespan.",
        "e": "Raising IGF-1 extends lifespan!",
    }
    assert family_groups(versions, statements) == [["a", "b"], ["c", "d"], ["e"]]


# Composites ----------------------------------------------------------------------------------------------------


def test_the_rubrics_carry_the_protocol_weights_and_anchors():
    paths, runs = rules.rubric(rules.PATH_RUBRIC), rules.rubric(rules.RUN_RUBRIC)
    assert [d.weight for d in paths.dimensions] == [5, 30, 20, 20, 10, 10, 5]
    assert [d.weight for d in runs.dimensions] == [25, 15, 15, 20, 10, 10, 5]
    assert paths.anchors[0] == "absent or contradicted" and paths.anchors[4].startswith("comprehensive")
    assert [d.key for d in runs.dimensions if d.needs_budget] == ["direction_allocation", "budget_discipline"]


def test_a_full_composite_is_the_weighted_anchor_mean_on_100():
    rubric = rules.rubric(rules.PATH_RUBRIC)
    scores = dict(zip(rubric.keys, [4, 3, 2, 2, 1, 0, 4], strict=True))
    result = rules.composite(rubric, scores)
    assert result.scope == rules.FULL
    assert result.value == pytest.approx((5 * 4 + 30 * 3 + 20 * 2 + 20 * 2 + 10 * 1 + 0 + 5 * 4) / 4)
    assert result.mask == "1111111"


def test_an_inapplicable_dimension_gives_a_restricted_composite_with_its_mask():
    rubric = rules.rubric(rules.PATH_RUBRIC)
    scores = {key: 4 for key in rubric.keys} | {"efficiency": INAPPLICABLE}
    result = rules.composite(rubric, scores)
    assert (result.scope, result.value, result.mask) == (rules.RESTRICTED, 100.0, "1111011")
    assert result.inapplicable == ("efficiency",)


def test_an_unknown_dimension_leaves_no_composite():
    rubric = rules.rubric(rules.PATH_RUBRIC)
    scores = {key: 4 for key in rubric.keys} | {"traceability": UNKNOWN, "efficiency": INAPPLICABLE}
    result = rules.composite(rubric, scores)
    assert (result.scope, result.value, result.unknown) == (rules.INCOMPLETE, None, ("traceability",))


def test_restricted_composites_are_grouped_by_mask_never_pooled_with_full_ones():
    rubric = rules.rubric(rules.PATH_RUBRIC)
    full = {key: 2 for key in rubric.keys}
    restricted = full | {"efficiency": INAPPLICABLE}
    other = full | {"traceability": INAPPLICABLE, "efficiency": 4}
    unknown = full | {"evidence_use": UNKNOWN}
    summary = rules.composite_summary(
        rules.composite(rubric, scores) for scores in (full, full | {"traceability": 4}, restricted, other, unknown)
    )
    assert summary.complete == 2 and summary.mean == pytest.approx((50 + 52.5) / 2)
    assert summary.restricted == [
        {"mask": "1111011", "n": 1, "mean": 50.0},
        {"mask": "1111110", "n": 1, "mean": pytest.approx(100 * (95 * 2 + 10 * 2) / (4 * 95))},
    ]
    assert summary.incomplete == 1


def test_without_recorded_budgets_the_allocation_dimensions_are_unknown():
    rubric = rules.rubric(rules.RUN_RUBRIC)
    scores = {key: 3 for key in rubric.keys}
    counted = rules.with_budget_rule(rubric, scores, budget_recorded=False)
    assert counted["direction_allocation"] == counted["budget_discipline"] == UNKNOWN
    assert rules.composite(rubric, counted).scope == rules.INCOMPLETE
    recorded = rules.with_budget_rule(rubric, scores, budget_recorded=True)
    assert rules.composite(rubric, recorded).value == 75.0


# Families as recorded -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_starting_grouping_is_kept_and_later_proposals_join_their_relatives_family():
    from reviewapp.models import AuditEvent
    from reviewapp.panel.models import ContributionFamily, FamilyMember
    from reviewapp.panel.services.families import families_group, family_record
    from tests import factories

    task = factories.make_task()
    root = factories.make_proposal(task=task, external_id="F-a", statement="Claim one.")
    duplicate = factories.make_proposal(task=task, external_id="F-b", statement="  claim ONE. ")
    alone = factories.make_proposal(task=task, external_id="F-c", statement="Claim two.")
    cohort = factories.make_cohort([root, duplicate, alone])
    assert families_group(cohort=cohort) == 2
    assert families_group(cohort=cohort) == 0
    first = FamilyMember.objects.get(proposal=root).family
    assert set(first.members.values_list("proposal__external_id", flat=True)) == {"F-a", "F-b"}
    family_record(cohort=cohort, family=first, values={"maturity": "study_completed", "status": "supported"}, user=None)
    child = factories.make_proposal(task=task, external_id="F-d", statement="Claim one, revised.")
    child.parents.add(root)
    cohort.proposals.add(child)
    families_group(cohort=cohort)
    assert FamilyMember.objects.get(proposal=child).family == first
    # Moving a proposal takes no maturity with it: its new family keeps its own record.
    other = FamilyMember.objects.get(proposal=alone).family
    family_record(cohort=cohort, family=other, values={"members": ["F-b"]}, user=None)
    assert FamilyMember.objects.get(proposal=duplicate).family == other
    assert ContributionFamily.objects.get(pk=other.pk).maturity == "proposed"
    assert AuditEvent.objects.filter(action="family_record").count() == 2
