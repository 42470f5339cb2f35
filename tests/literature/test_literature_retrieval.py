"""Retrieval over the reference corpus (SPEC §5): the lexical gate, ranking and the temporal cutoff. The same tests
run on SQLite (FTS5, bm25) and, with DATABASE_URL set, on PostgreSQL (tsvector, GIN, ts_rank)."""

import hashlib
from datetime import date

import pytest
from django.db import connection

from literature import retrieval
from literature.importers.records import ParsedReference
from literature.models import Reference
from literature.services import references_upsert
from literature.stopwords import ENGLISH_STOP_WORDS, GATE_STOP_WORDS, NEGATIONS

HYPOTHESIS = (
    "In aged mice, CD38 expressed by senescent macrophages degrades NAD+ in visceral adipose tissue, "
    "and blocking CD38 restores NAD+ levels."
)


def make_reference(title: str, abstract: str = "", *, published=None, precision="day", source_id=None) -> Reference:
    source_id = source_id or hashlib.sha256(title.encode()).hexdigest()[:12]
    return Reference.objects.create(
        source=Reference.Source.DEMO,
        source_id=source_id,
        title=title,
        abstract=abstract,
        published=published,
        published_precision=precision if published else "",
        content_sha256=hashlib.sha256((title + abstract).encode()).hexdigest(),
        is_demo=True,
    )


def titles(candidates) -> list[str]:
    return [candidate.title for candidate in candidates]


# The gate ----------------------------------------------------------------------------------------------------------


def test_terms_are_case_folded_words_without_stopwords_numbers_or_single_letters():
    assert retrieval.terms("The Senescent CELLS of 2 aged mice, and the cells' p16 in 2024 — a β-cell.") == [
        "senescent",
        "cell",
        "aged",
        "mice",
        "p16",
    ]


def test_plurals_fold_to_their_singular():
    assert retrieval.terms("studies processes levels analysis status mice") == [
        "study",
        "process",
        "level",
        "analysis",
        "status",
        "mice",
    ]


def test_gate_passes_at_three_shared_terms_and_not_at_two():
    hypothesis = "Rapamycin extends lifespan through autophagy in yeast."
    two = "Rapamycin extends the chronological age of cultured cells."
    three = "Rapamycin extends lifespan of cultured cells."
    assert retrieval.shared_terms(hypothesis, two) == ["rapamycin", "extend"]
    assert not retrieval.passes_gate(hypothesis, two)
    assert retrieval.shared_terms(hypothesis, three) == ["rapamycin", "extend", "lifespan"]
    assert retrieval.passes_gate(hypothesis, three)


def test_negations_never_count_as_shared_terms():
    hypothesis = "Rapamycin does not extend lifespan without autophagy, and never in neither sex: it cannot."
    reference = "Rapamycin did not extend lifespan; no effect without diet, never nor ever: it cannot, it doesn't."
    assert retrieval.shared_terms(hypothesis, reference) == ["rapamycin", "extend", "lifespan"]
    assert not retrieval.passes_gate("Metformin does not act without AMPK.", "Rapamycin does not act without mTOR.")
    assert {"not", "no", "nor", "never", "without", "doesn"} <= NEGATIONS <= GATE_STOP_WORDS


def test_the_frozen_list_is_scikit_learns_english_list():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as SCIKIT_LEARN

    assert ENGLISH_STOP_WORDS == SCIKIT_LEARN and len(ENGLISH_STOP_WORDS) == 318


def test_retrieval_and_the_gate_read_the_first_6000_characters_of_the_abstract(db):
    filler = "Filler words about something else entirely. " * 140  # 6300 characters
    make_reference("A long review", filler + "Spermidine triggers autophagy in cardiomyocytes.")
    candidate = retrieval.Candidate(0, "demo", "x", "", "", "Review", filler + "tail", None, 0.0)
    assert len(candidate.retrieval_text) == len("Review\n") + 6000
    assert len(candidate.judgement_text) == len("Review\n") + 2500
    assert retrieval.search("spermidine autophagy cardiomyocytes", limit=5) == []
    assert titles(retrieval.search("long review filler", limit=5)) == ["A long review"]


def test_the_query_reads_every_term_of_the_first_6000_characters_of_the_text(db):
    """A long proposal whose only terms shared with the reference come after a hundred others: they are still
    searched (the rarest terms of the first 6000 characters), and terms after those 6000 characters are not."""
    opening = " ".join(f"word{n}x" for n in range(100)) + ". "  # 100 distinct terms no reference has
    assert len(retrieval.terms(opening)) == 100
    make_reference("Spermidine triggers autophagy in cardiomyocytes", "Spermidine extended the lifespan of mice.")
    text = opening + "Spermidine restores autophagy in ageing cardiomyocytes."
    assert len(text) < retrieval.RETRIEVAL_CHARS
    assert titles(retrieval.search(text, limit=5)) == ["Spermidine triggers autophagy in cardiomyocytes"]
    beyond = opening + "Filler. " * 800 + "Spermidine restores autophagy in ageing cardiomyocytes."
    assert retrieval.search(beyond, limit=5) == []


# Ranking -----------------------------------------------------------------------------------------------------------


@pytest.fixture
def corpus(db):
    make_reference(
        "Senescent macrophages express CD38 and degrade NAD+ in aged adipose tissue",
        "CD38 on senescent macrophages in visceral adipose tissue of aged mice degrades NAD+. Blocking CD38 "
        "restored NAD+ levels in old animals.",
        published=date(2020, 5, 11),
    )
    make_reference(
        "NAD+ precursors in ageing muscle",
        "Nicotinamide riboside raised NAD+ levels in the skeletal muscle of aged mice and improved endurance.",
        published=date(2016, 6, 1),
    )
    make_reference(
        "Macrophage polarisation in adipose tissue",
        "Adipose tissue macrophages of obese mice shift towards an inflammatory state.",
        published=date(2018, 1, 1),
        precision="year",
    )
    make_reference(
        "Senescence in ageing tissues",
        "Senescent cells accumulate in aged tissues; senescent fibroblasts and senescent hepatocytes were counted "
        "in aged mice. Senescent cells, senescent again.",
        published=date(2019, 3, 1),
        precision="month",
    )
    make_reference("Telomerase and cancer", "Telomerase reactivation in tumour cells of adult zebrafish.")


def test_a_relevant_reference_ranks_first(corpus):
    found = retrieval.search(HYPOTHESIS, limit=10)
    assert titles(found)[0] == "Senescent macrophages express CD38 and degrade NAD+ in aged adipose tissue"
    assert "Telomerase and cancer" not in titles(found)
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


def test_sharing_more_distinct_terms_outranks_repeating_one(corpus):
    found = titles(retrieval.search("senescent macrophages CD38 NAD adipose", limit=10))
    assert found.index("Senescent macrophages express CD38 and degrade NAD+ in aged adipose tissue") < found.index(
        "Senescence in ageing tissues"
    )
    found = titles(retrieval.search("Nicotinamide riboside endurance muscle, senescent cells", limit=10))
    assert found[0] == "NAD+ precursors in ageing muscle"


def test_a_candidate_carries_its_citation(corpus):
    (candidate,) = retrieval.search("nicotinamide riboside endurance", limit=1)
    assert candidate.citation() == {
        "source": "demo",
        "id": candidate.source_id,
        "title": "NAD+ precursors in ageing muscle",
        "year": 2016,
        "link": "",
    }
    reference = Reference.objects.get(pk=candidate.reference_id)
    Reference.objects.filter(pk=reference.pk).update(pmid="31234567", doi="10.1000/xyz")
    (candidate,) = retrieval.search("nicotinamide riboside endurance", limit=1)
    assert candidate.link == "https://pubmed.ncbi.nlm.nih.gov/31234567/"


def test_a_text_of_stopwords_finds_nothing(corpus):
    assert retrieval.search("it is not what they would have been without", limit=10) == []


# The temporal cutoff -------------------------------------------------------------------------------------------------


def test_cutoff_keeps_only_references_published_before_the_date(corpus):
    query = "senescent macrophages CD38 NAD adipose aged mice tissue telomerase"
    assert len(retrieval.search(query, limit=10)) == 5
    assert titles(retrieval.search(query, limit=10, published_before=date(2020, 5, 11))) == [
        title
        for title in titles(retrieval.search(query, limit=10))
        if title.startswith(("NAD+", "Macro", "Senescence"))
    ]
    found = set(titles(retrieval.search(query, limit=10, published_before=date(2020, 5, 12))))
    assert "Senescent macrophages express CD38 and degrade NAD+ in aged adipose tissue" in found
    # No date: left out of every bounded search.
    assert "Telomerase and cancer" not in found


def test_cutoff_counts_a_year_or_month_date_as_its_whole_period(corpus):
    query = "senescent macrophages adipose tissue aged mice"
    # "2018" (year only) may mean any day of 2018; "March 2019" any day of March.
    assert "Macrophage polarisation in adipose tissue" not in titles(
        retrieval.search(query, limit=10, published_before=date(2018, 12, 31))
    )
    assert "Macrophage polarisation in adipose tissue" in titles(
        retrieval.search(query, limit=10, published_before=date(2019, 1, 1))
    )
    assert "Senescence in ageing tissues" not in titles(
        retrieval.search(query, limit=10, published_before=date(2019, 3, 31))
    )
    assert "Senescence in ageing tissues" in titles(
        retrieval.search(query, limit=10, published_before=date(2019, 4, 1))
    )


# Keeping the index up to date ----------------------------------------------------------------------------------------


def test_new_changed_and_deleted_references_are_searched_as_they_are_now(db):
    reference = make_reference("Klotho in kidney ageing", "Klotho deficiency accelerates renal fibrosis in mice.")
    assert titles(retrieval.search("klotho renal fibrosis", limit=5)) == ["Klotho in kidney ageing"]
    reference.abstract = "Fibroblast growth factor 23 signalling in bone."
    reference.save()
    assert retrieval.search("klotho deficiency renal fibrosis accelerates", limit=5)[0].abstract == reference.abstract
    assert retrieval.search("renal fibrosis deficiency accelerates", limit=5) == []
    assert titles(retrieval.search("growth factor signalling bone", limit=5)) == ["Klotho in kidney ageing"]
    reference.delete()
    assert retrieval.search("klotho growth factor signalling bone", limit=5) == []


def test_index_references_indexes_what_is_pending_once(db):
    first = make_reference("Frailty index in old rats", "A frailty index predicts mortality in old rats.")
    second = make_reference("Grip strength in centenarians", "Grip strength declines in centenarians.")
    assert retrieval.index_references([first.pk]) == 1
    assert retrieval.index_references() == 1
    assert retrieval.index_references() == 0
    assert titles(retrieval.search("grip strength centenarians", limit=5)) == [second.title]


def test_references_written_by_the_import_writer_are_found_after_an_update(db):
    def parsed(abstract: str) -> ParsedReference:
        return ParsedReference(
            source="pubmed", source_id="30000001", pmid="30000001", title="Apelin and muscle ageing", abstract=abstract
        )

    references_upsert(references=[parsed("Apelin secreted by exercising muscle rejuvenates satellite cells.")])
    assert titles(retrieval.search("apelin exercising muscle satellite", limit=5)) == ["Apelin and muscle ageing"]
    references_upsert(references=[parsed("Apelin levels fall with age in human plasma samples.")])
    (candidate,) = retrieval.search("apelin plasma human samples", limit=5)
    assert candidate.abstract.startswith("Apelin levels fall")
    assert retrieval.search("exercising rejuvenates satellite", limit=5) == []


def test_sqlite_index_is_rebuilt_when_a_table_rebuild_dropped_its_triggers(db):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite rebuilds tables (and drops their triggers) on schema changes; PostgreSQL does not")
    make_reference("Heterochronic parabiosis", "Young blood rejuvenates old muscle stem cells.")
    retrieval.index_references()
    with connection.cursor() as cursor:
        for name in ("insert", "update", "delete"):
            cursor.execute(f"DROP TRIGGER literature_reference_search_{name}")
    make_reference("GDF11 controversy", "GDF11 levels in ageing mice were re-examined with specific antibodies.")
    assert titles(retrieval.search("GDF11 specific antibodies", limit=5)) == ["GDF11 controversy"]
    assert titles(retrieval.search("parabiosis young blood", limit=5)) == ["Heterochronic parabiosis"]


# Optional dense re-ranking -------------------------------------------------------------------------------------------


def test_dense_reranking_is_skipped_cleanly_without_its_package(corpus):
    assert retrieval.dense_model("oh_no_such_embedding_package") is None
    found = retrieval.search(HYPOTHESIS, limit=10)
    assert retrieval.dense_rerank(HYPOTHESIS, found, package="oh_no_such_embedding_package") == found
