"""The panel's pages for coordinators and analysts: the cohort table (sortable, a fixed number of queries), a
hypothesis's profile, ratings, calibration, prompts, the figures and the forms that start work."""

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp.models import BackgroundJob
from reviewapp.panel import figures, selectors
from reviewapp.panel.models import Comparison, PanelSubject
from reviewapp.panel.profile import DIMENSION_KEYS
from reviewapp.panel.services.critique import comparisons_import
from reviewapp.panel.services.panel import panel_start_for_cohort
from screening.models import Hypothesis, Run
from tests.panel.support import make_cohort, proposal, review_reply


def reviewed_cohort(script, run_job, coordinator, size: int, name: str):
    proposals = [
        proposal(f"{name}{n}", f"T-{name}{n % 3}", parents=[f"{name}{n - 3}"] if n > 3 else [])
        for n in range(1, size + 1)
    ]
    for n, item in enumerate(proposals, start=1):
        for role in ("rubric_judge", "domain_scientist", "methods_reviewer"):
            script.reviews[(role, item["statement"])] = [review_reply(dict.fromkeys(DIMENSION_KEYS, 1 + n % 10))]
    cohort = make_cohort(proposals, user=coordinator, name=f"Pages {name}")
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    ids = [item["id"] for item in proposals]
    rows = [{"a": ids[i], "b": ids[i + 3], "outcome": "a"} for i in range(len(ids) - 3)]
    comparisons_import(cohort=cohort, rows=rows, user=coordinator)
    return cohort


def queries_of(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_cohort_table_and_the_ratings_page_take_a_fixed_number_of_queries(
    client, models, script, run_job, coordinator, analyst
):
    small = reviewed_cohort(script, run_job, coordinator, 4, "s")
    large = reviewed_cohort(script, run_job, coordinator, 15, "l")
    client.force_login(analyst)
    for name in ("panel-cohort", "panel-ratings"):
        assert queries_of(client, reverse(name, args=[small.pk])) == queries_of(client, reverse(name, args=[large.pk]))


def test_the_cohort_table_sorts_and_links_each_profile(client, models, script, run_job, coordinator):
    cohort = reviewed_cohort(script, run_job, coordinator, 6, "t")
    client.force_login(coordinator)
    page = client.get(reverse("panel-cohort", args=[cohort.pk]) + "?sort=-q").content.decode()
    order = [page.index(f">t{n}<") for n in (6, 5, 4, 3, 2, 1)]  # Q = 1 + n for proposal tn
    assert order == sorted(order)
    subject = PanelSubject.objects.get(proposal__external_id="t4")
    assert reverse("panel-subject", args=[subject.pk]) in page
    assert "Start the AI panel" in page and "Substantive progress" in page
    table = list(
        csv.reader(
            io.StringIO(
                client.get(reverse("panel-cohort-figure", args=[cohort.pk, "panel-table", "csv"])).content.decode()
            )
        )
    )
    assert table[0][:5] == ["proposal", "task", "ai_reviews", "ai_failed_roles", "ai_eligible_votes"]
    assert len(table) == 7


def test_sorting_by_rating_puts_proposals_never_compared_last(client, models, script, run_job, coordinator):
    cohort = make_cohort([proposal(f"w{n}", "T-W") for n in range(1, 5)], user=coordinator)
    # w1 loses twice: its s falls below the prior s that w3 and w4, never compared, still hold.
    rows = [{"a": "w1", "b": "w2", "outcome": "b"}, {"a": "w2", "b": "w1", "outcome": "a"}]
    comparisons_import(cohort=cohort, rows=rows, user=coordinator)
    client.force_login(coordinator)
    for sort in ("s", "-s", "rank", "-rank", "comparisons", "-comparisons"):
        page = client.get(reverse("panel-cohort", args=[cohort.pk]) + f"?sort={sort}").content.decode()
        compared = sorted(page.index(f">w{n}<") for n in (1, 2))
        never = sorted(page.index(f">w{n}<") for n in (3, 4))
        assert compared[-1] < never[0], sort
    page = client.get(reverse("panel-cohort", args=[cohort.pk]) + "?sort=s").content.decode()
    assert page.index(">w1<") < page.index(">w2<")


def one_unknown_one_inapplicable(script, run_job, coordinator):
    """A reviewed cohort of one proposal, "x1": two roles call novelty unknown and actionability inapplicable."""
    cohort = make_cohort([proposal("x1", "T-X")], user=coordinator)
    for role in ("rubric_judge", "domain_scientist"):
        scores = {"novelty": "unknown", "actionability": "inapplicable"}
        script.reviews[(role, proposal("x1", "T-X")["statement"])] = [review_reply(scores)]
    run_job(panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    return cohort


def test_the_table_tells_inapplicable_from_unknown(client, models, script, run_job, coordinator):
    cohort = one_unknown_one_inapplicable(script, run_job, coordinator)
    client.force_login(coordinator)
    page = client.get(reverse("panel-cohort", args=[cohort.pk])).content.decode()
    cells = page.split(">x1<", 1)[1].split("</tr>", 1)[0]
    assert cells.count(">inapplicable<") == 1 and cells.count(">–<") == 1


def test_the_profile_plot_draws_only_known_medians(client, models, script, run_job, coordinator):
    one_unknown_one_inapplicable(script, run_job, coordinator)
    found = selectors.subject_profile(PanelSubject.objects.get(proposal__external_id="x1").pk)
    axes = figures.profile_plot(found).axes[0]
    # Six bars of 5: none, not even of 0, for the two medians that do not exist.
    assert sorted(bar.get_width() for bar in axes.patches) == [5.0] * 6
    labels = [text.get_text() for text in axes.texts]
    assert labels == ["no median (unknown)", "inapplicable"]


def test_analysts_read_the_pages_without_the_forms(client, models, script, run_job, coordinator, analyst):
    cohort = reviewed_cohort(script, run_job, coordinator, 5, "u")
    client.force_login(analyst)
    subject = PanelSubject.objects.get(proposal__external_id="u4")
    pages = {
        "panel": client.get(reverse("panel-cohort", args=[cohort.pk])).content.decode(),
        "ratings": client.get(reverse("panel-ratings", args=[cohort.pk])).content.decode(),
        "calibration": client.get(reverse("panel-calibration", args=[cohort.pk])).content.decode(),
        "profile": client.get(reverse("panel-subject", args=[subject.pk])).content.decode(),
        "prompts": client.get(reverse("panel-prompts")).content.decode(),
    }
    assert "Start the AI panel" not in pages["panel"] and "Start the critique" not in pages["ratings"]
    assert "Pairwise critique and ratings" in pages["ratings"] and "u1" in pages["ratings"]
    assert "Calibration needs proposals with both" in pages["calibration"]
    assert "Q = 5.00" in pages["profile"] and "Revision of u1" in pages["profile"] and "Claim: " not in pages["profile"]
    assert "Review the research proposal below" in pages["prompts"]
    # The six current prompts once each (the fresh-context reference's among them), and each stored version once: the
    # three roles' and the revision judge's (the comparisons here were imported, so the critique's prompt was never
    # sent, and this roster names no reference reviewer).
    assert pages["prompts"].count('<section class="card" id="prompt-') == 6
    assert 'id="prompt-reference_reviewer"' in pages["prompts"]
    assert pages["prompts"].count("<details>") == 4
    for figure, file_format in (
        ("ratings", "png"),
        ("ratings", "svg"),
        ("comparisons", "csv"),
        ("calibration", "png"),
        ("calibration-q", "csv"),
    ):
        response = client.get(reverse("panel-cohort-figure", args=[cohort.pk, figure, file_format]))
        assert response.status_code == 200, (figure, file_format)
    assert client.get(reverse("panel-cohort-figure", args=[cohort.pk, "comparisons", "png"])).status_code == 404
    for file_format in ("png", "csv"):
        assert client.get(reverse("panel-subject-figure", args=[subject.pk, "profile", file_format])).status_code == 200
    cohort_page = client.get(reverse("cohort-detail", args=[cohort.pk])).content.decode()
    assert reverse("panel-cohort", args=[cohort.pk]) in cohort_page


def test_coordinators_start_work_from_the_pages(client, models, coordinator):
    cohort = make_cohort([proposal("v1", "T-V"), proposal("v2", "T-V")], user=coordinator)
    client.force_login(coordinator)
    started = client.post(reverse("panel-cohort-start", args=[cohort.pk]), {"redo": "true"})
    job = BackgroundJob.objects.get(kind="ai_panel")
    assert started["Location"] == reverse("job-detail", args=[job.pk]) and job.params == {
        "cohort_id": cohort.pk,
        "redo": True,
    }
    refused = client.post(reverse("panel-cohort-start", args=[cohort.pk]), follow=True)
    assert "already at work" in refused.content.decode()
    started = client.post(reverse("panel-comparisons-run", args=[cohort.pk]), {"per_proposal": "2", "seed": "5"})
    assert BackgroundJob.objects.get(kind="ai_critique").params == {
        "cohort_id": cohort.pk,
        "per_proposal": 2,
        "seed": 5,
        "repeat": False,
    }
    BackgroundJob.objects.filter(kind="ai_critique").delete()
    client.post(
        reverse("panel-comparisons-run", args=[cohort.pk]), {"per_proposal": "2", "seed": "5", "repeat": "true"}
    )
    assert BackgroundJob.objects.get(kind="ai_critique").params["repeat"] is True
    bad = client.post(
        reverse("panel-comparisons-import", args=[cohort.pk]),
        {"comparisons": "a,b,outcome\nv1,v2,a\nv1,zz,b"},
        follow=True,
    )
    assert "Line 2, b:" in bad.content.decode() and not Comparison.objects.exists()
    good = client.post(
        reverse("panel-comparisons-import", args=[cohort.pk]), {"comparisons": "v1,v2,a\nv2,v1,tie\n"}, follow=True
    )
    assert "2 comparisons added" in good.content.decode() and Comparison.objects.count() == 2
    recomputed = client.post(reverse("panel-ratings-recompute", args=[cohort.pk]), follow=True)
    assert "recomputed from the 2 comparisons" in recomputed.content.decode()


def test_screening_hypotheses_are_selected_on_their_page(client, models, script, run_job, coordinator, analyst):
    run = Run.objects.create(question="Does the niche select mutant clones?", shuffle_seed=1)
    for number in (1, 2):
        Hypothesis.objects.create(
            run=run,
            source="generator-0",
            source_index=number,
            label=f"H{number}",
            position=number,
            statement=f"Niche claim {number}.",
            selected=number == 1,
            author_name="Hidden author",
        )
    client.force_login(analyst)
    page = client.get(reverse("panel-run", args=[run.public_id])).content.decode()
    assert "Niche claim 2." in page and "Hidden author" not in page and "Start the AI panel for" not in page
    assert client.post(reverse("panel-run", args=[run.public_id]), {"hypotheses": ["H1"]}).status_code == 403
    client.force_login(coordinator)
    started = client.post(reverse("panel-run", args=[run.public_id]), {"hypotheses": ["H1"]})
    job = BackgroundJob.objects.get(kind="ai_panel")
    assert started["Location"] == reverse("job-detail", args=[job.pk])
    run_job(job.pk)
    page = client.get(reverse("panel-run", args=[run.public_id])).content.decode()
    assert "5.00" in page
    nothing = client.post(reverse("panel-run", args=[run.public_id]), {}, follow=True)
    assert "Hypotheses: This list may not be empty." in nothing.content.decode()
    redone = client.post(reverse("panel-run", args=[run.public_id]), {"hypotheses": ["H1"], "redo": "true"})
    assert BackgroundJob.objects.latest("pk").params["redo"] is True and redone.status_code == 302


@pytest.mark.parametrize("name", ["panel-cohort", "panel-ratings", "panel-calibration"])
def test_reviewers_are_refused(client, reviewer, name, db):
    cohort = make_cohort([proposal("w1", "T-W")])
    client.force_login(reviewer)
    assert client.get(reverse(name, args=[cohort.pk])).status_code == 403


def test_ranks_read_as_a_fraction_and_a_place_among_the_tasks_ranked_proposals():
    from reviewapp.panel.views import ordinal, rank_in_words

    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 102, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "102nd", "111th",
    ]  # fmt: skip
    ranks = [1.0, 0.6, 0.6, 0.2, 0.0]
    assert [rank_in_words(rank, ranks) for rank in ranks] == [
        "1.00 (1st of 5)", "0.60 (2nd of 5)", "0.60 (2nd of 5)", "0.20 (4th of 5)", "0.00 (5th of 5)",
    ]  # fmt: skip
    assert rank_in_words(None, ranks) == ""


def test_the_ratings_page_shows_ranks_as_places_and_the_plot_names_its_points(
    client, models, script, run_job, coordinator
):
    cohort = reviewed_cohort(script, run_job, coordinator, 6, "r")
    client.force_login(coordinator)
    page = client.get(reverse("panel-ratings", args=[cohort.pk])).content.decode()
    assert "(1st of 2)" in page and "(2nd of 2)" in page
    assert "1.000" not in page.split('id="ratings"')[1].split("</section>")[0]  # ranks have two decimals
    from reviewapp.panel.api import ratings_as_dict

    source = ratings_as_dict(cohort)
    plot = figures.ratings_plot(source)
    labels = sorted(text.get_text() for text in plot.axes[0].texts)
    assert labels == sorted(item["proposal"] for item in source["ratings"]) and len(labels) == 6
