"""An empty list says what to do next and links to it; to someone who cannot do it, it says who can and how."""

import re

import pytest

LIST_PAGES = {
    # page: (empty state's id, links a coordinator gets, links an analyst gets)
    "/cohorts/": ("no-cohorts", ["#create-cohort"], ["/benchmarks/", "/screening/runs/"]),
    "/benchmarks/": ("no-benchmarks", ["#create-benchmark"], ["/api/v1/docs"]),
    "/inspiration/": ("no-audits", ["/inspiration/cutoffs/"], ["/inspiration/cutoffs/"]),
    "/literature/citation-waves/": ("no-waves", ["/literature/corpus/"], ["/literature/corpus/"]),
}


def _empty_state(html: str, element_id: str) -> str:
    match = re.search(rf'<div class="empty-state" id="{element_id}">(.*?)</div>', html, re.DOTALL)
    assert match, f"no empty state #{element_id}"
    return match.group(1)


@pytest.mark.parametrize("url", LIST_PAGES)
def test_a_coordinator_is_told_the_next_step_with_its_link(client, coordinator, url):
    element_id, links, _ = LIST_PAGES[url]
    client.force_login(coordinator)
    state = _empty_state(client.get(url).content.decode(), element_id)
    assert "Next:" in state
    for link in links:
        assert f'href="{link}"' in state, (url, link)


@pytest.mark.parametrize("url", LIST_PAGES)
def test_an_analyst_is_told_who_can_fill_the_list_and_how(client, analyst, url):
    element_id, _, links = LIST_PAGES[url]
    client.force_login(analyst)
    html = client.get(url).content.decode()
    state = _empty_state(html, element_id)
    assert "Coordinators" in state and "ask a coordinator" in state.lower()
    assert "Next:" not in state
    for link in links:
        assert f'href="{link}"' in state, (url, link)


def test_analysts_are_not_offered_a_form_they_cannot_use(client, analyst):
    client.force_login(analyst)
    assert 'id="create-benchmark"' not in client.get("/benchmarks/").content.decode()


def test_the_screening_runs_list_says_where_runs_start(client, analyst):
    client.force_login(analyst)
    html = client.get("/screening/runs/").content.decode()
    assert "No runs yet. Start one on the public Open Hypothesis page" in html
    assert 'href="/open-hypothesis/"' in html


def test_a_person_without_tokens_is_pointed_to_the_api_reference(client, reviewer):
    client.force_login(reviewer)
    html = client.get("/accounts/tokens/").content.decode()
    assert 'id="no-tokens"' in html and 'href="/api/v1/docs"' in html
