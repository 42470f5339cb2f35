import pytest
from django.db import IntegrityError

from reviewapp.core import roles
from tests import factories


def test_each_role_holds_only_its_permission(reviewer, coordinator, analyst):
    assert roles.can_review(reviewer) and not roles.can_coordinate(reviewer) and not roles.can_read_all(reviewer)
    assert roles.can_coordinate(coordinator) and roles.can_read_all(coordinator)
    assert roles.can_read_all(analyst) and not roles.can_coordinate(analyst)


def test_one_assignment_per_reviewer_and_proposal_in_a_cohort(reviewer):
    proposal = factories.make_proposal()
    cohort = factories.make_cohort([proposal])
    factories.make_assignment(cohort, reviewer, proposal)
    with pytest.raises(IntegrityError):
        factories.make_assignment(cohort, reviewer, proposal, position=2)
