import pytest
from django.contrib.staticfiles import finders
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


@pytest.mark.parametrize("path", ["/accounts/login/", "/open-hypothesis/"])
def test_every_page_opens_with_a_skip_link_and_carries_the_icon(client, db, path):
    html = client.get(path).content.decode()
    body = html.split("<body", 1)[1]
    assert body.split(">", 1)[1].lstrip().startswith('<a class="skip-link" href="#content">Skip to content</a>')
    assert '<main id="content" tabindex="-1"' in html
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    assert "The Content-Security-Policy allows" not in html  # template comments stay out of the page


def test_the_icon_is_served_from_static_files_also_at_the_address_browsers_guess(client, db):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon-32.png"
    for name in ("favicon.svg", "favicon-32.png", "apple-touch-icon.png"):
        assert finders.find(name), name
