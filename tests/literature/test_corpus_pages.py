"""The corpus for coordinators and analysts: search with the project's retrieval, filters by date and source,
paging, one reference's page, and the novelty checks and inspiration audits that used it."""

import hashlib
from datetime import date

import pytest
from django.urls import reverse

from literature.models import NoveltyCheck, Reference
from reviewapp.inspiration.models import InspirationAudit, InspirationItem
from tests import factories


def reference(source_id: str, title: str, published: date | None, source: str = "csv", precision: str = "day"):
    return Reference.objects.create(
        source=source,
        source_id=source_id,
        title=title,
        abstract=f"{title}. An abstract about it.",
        published=published,
        published_precision=precision if published else "",
        content_sha256=hashlib.sha256(source_id.encode()).hexdigest(),
    )


@pytest.fixture
def corpus(db):
    return {
        "old": reference("old", "Senolytic clearance in aged marrow", date(2015, 3, 1)),
        "new": reference("new", "Senolytic clearance restores niche function", date(2024, 5, 2), source="europepmc"),
        "year": reference("year", "Senolytic trials in frail adults", date(2024, 1, 1), precision="year"),
        "other": reference("other", "Rapamycin and ovarian reserve", date(2020, 6, 1)),
        "undated": reference("undated", "Senolytic review without a date", None),
    }


def titles(page: str, corpus: dict) -> list[str]:
    return sorted(key for key, ref in corpus.items() if ref.title in page)


def test_search_finds_by_the_projects_retrieval_and_filters_by_source_and_date(client, analyst, corpus):
    client.force_login(analyst)
    url = reverse("literature-corpus")

    found = client.get(url, {"q": "senolytic clearance"}).content.decode()
    assert titles(found, corpus) == ["new", "old", "undated", "year"]
    assert "The best 4 matches" in found
    europepmc_only = client.get(url, {"q": "senolytic clearance", "source": "europepmc"}).content.decode()
    assert titles(europepmc_only, corpus) == ["new"]
    dated = client.get(url, {"q": "senolytic", "published_from": "2024-01-01", "published_until": "2024-12-31"})
    assert titles(dated.content.decode(), corpus) == ["new", "year"]
    newest = client.get(url).content.decode()
    assert newest.index(corpus["new"].title) < newest.index(corpus["year"].title) < newest.index(corpus["old"].title)
    assert ">2024</td>" in newest  # a year-only date is shown as its year
    refused = client.get(url, {"published_from": "yesterday"}).content.decode()
    assert "Published from:" in refused and "Senolytic" not in refused.split("<h2>Size</h2>")[0].split("</form>")[1]


def test_browsing_pages_through_the_corpus(client, coordinator, db):
    for n in range(60):
        reference(f"r{n:02d}", f"Reference number {n:02d}", date(2020, 1, 1 + n % 28))
    client.force_login(coordinator)
    first = client.get(reverse("literature-corpus")).content.decode()
    assert "60 references;" in first and "showing 1–50" in first and "page=2" in first
    second = client.get(reverse("literature-corpus"), {"page": 2}).content.decode()
    assert "showing 51–60" in second and "page=3" not in second


def test_a_references_page_lists_the_checks_and_audits_that_used_it(client, analyst, corpus):
    used = corpus["new"]
    proposal = factories.make_proposal(external_id="P-used")
    NoveltyCheck.objects.create(
        hypothesis_text="h", proposal=proposal, state="done", verdict="reported", reference=used
    )
    NoveltyCheck.objects.create(
        hypothesis_text="h",
        proposal=proposal,
        state="done",
        verdict="not_reported",
        candidates=[{"label": "R1", "reference_id": used.pk, "title": used.title}],
    )
    NoveltyCheck.objects.create(hypothesis_text="h", proposal=proposal, state="done", verdict="not_reported")
    audit = InspirationAudit.objects.create(population="cohort")
    for position, retrieved in enumerate((True, False), start=1):
        InspirationItem.objects.create(
            audit=audit,
            position=position,
            label=f"v{position}",
            group="g",
            text="t",
            candidate=used,
            retrieved=retrieved,
        )

    client.force_login(analyst)
    page = client.get(reverse("literature-reference", args=[used.pk])).content.decode()

    assert used.title in page and "An abstract about it." in page
    assert page.count("Novelty check ") == 2
    assert "quoted as evidence; verdict reported" in page and "read as a candidate; verdict not_reported" in page
    assert f"Inspiration audit {audit.pk}" in page
    assert "best candidate of 2 version(s); 1 passed the lexical gate, 0 judged positive" in page
    unused = client.get(reverse("literature-reference", args=[corpus["other"].pk])).content.decode()
    assert "No novelty check or inspiration audit has used this reference yet." in unused
