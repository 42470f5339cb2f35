"""Writing references: new ones created, changed ones updated, identical ones left alone, one row per (source, id)
whatever repeats a file or a writer holds and whatever another import wrote meanwhile. On PostgreSQL a file import
copies its batches straight into the corpus, falling back to the staging table's COPY and its one upsert (as other
writers always do); on SQLite the batch upserts; the counts are the same."""

import io
import threading
import time

import psycopg
import pytest
import xxhash
from django.db import connection, transaction
from psycopg.types.json import Jsonb

from literature.importers import pubmed_xml
from literature.importers.records import ParsedReference
from literature.models import Reference, ReferenceImport
from literature.services import (
    _STAGED_COLUMNS,
    WRITE_BATCH,
    ImportInvalid,
    ReferenceWriter,
    _staged_row,
    references_import,
)
from tests.literature.test_literature_importers import fixture, pubmed_article, pubmed_set


def parsed(source_id: str, title: str, **fields) -> ParsedReference:
    return ParsedReference(
        source=Reference.Source.PUBMED,
        source_id=source_id,
        pmid=source_id,
        title=title,
        raw=f"<r>{title}</r>",
        **fields,
    )


def written(writer: ReferenceWriter) -> tuple[int, int, int]:
    return writer.created, writer.updated, writer.unchanged


@pytest.mark.django_db
def test_a_file_with_new_changed_and_unchanged_records_counts_each_and_updates_in_place():
    references_import(
        file=io.BytesIO(pubmed_set(pubmed_article("11", "Kept as it was"), pubmed_article("12", "First title"))),
        format="pubmed_xml",
    )
    before = {reference.source_id: reference for reference in Reference.objects.all()}

    summary = references_import(
        file=io.BytesIO(
            pubmed_set(
                pubmed_article("11", "Kept as it was"),
                pubmed_article("12", "Second title"),
                pubmed_article("13", "A new record"),
            )
        ),
        format="pubmed_xml",
    )

    assert (summary.records, summary.created, summary.updated, summary.unchanged) == (3, 1, 1, 1)
    after = {reference.source_id: reference for reference in Reference.objects.all()}
    assert sorted(after) == ["11", "12", "13"]
    assert after["12"].pk == before["12"].pk and after["12"].created_at == before["12"].created_at
    assert after["12"].title == "Second title" and "Second title" in after["12"].raw
    assert after["12"].updated_at > before["12"].updated_at
    assert after["11"].updated_at == before["11"].updated_at  # left alone, not rewritten
    assert after["13"].authors == [] and after["13"].published.year == 2020


@pytest.mark.django_db
def test_repeats_inside_one_file_across_write_batches_are_one_reference():
    articles = [pubmed_article(str(500_000 + n), f"Record {n}") for n in range(WRITE_BATCH + 3)]
    articles.append(pubmed_article("500000", "Record 0"))  # an identical copy of the first, a batch later
    articles.append(pubmed_article("500001", "Record 1, changed"))  # a conflicting one

    summary = references_import(file=io.BytesIO(pubmed_set(*articles)), format="pubmed_xml")

    assert (summary.records, summary.created, summary.repeated) == (WRITE_BATCH + 3, WRITE_BATCH + 3, 1)
    assert [entry["record"] for entry in summary.skipped] == [WRITE_BATCH + 5]
    assert Reference.objects.count() == WRITE_BATCH + 3
    assert Reference.objects.get(source_id="500001").title == "Record 1"


@pytest.mark.django_db
def test_the_same_reference_added_twice_to_a_writer_is_written_once_and_the_later_copy_wins():
    with transaction.atomic():
        writer = ReferenceWriter(batch_size=1)
        writer.add(parsed("21", "Earlier copy"))
        writer.add(parsed("22", "Another"))
        writer.add(parsed("21", "Later copy"))
        writer.flush()

    assert written(writer) == (2, 0, 0)
    assert Reference.objects.filter(source_id="21").get().title == "Later copy"


@pytest.mark.django_db
@pytest.mark.parametrize("same_content", [True, False])
def test_a_reference_another_import_wrote_meanwhile_is_never_duplicated(needs_postgres, same_content):
    """Between the comparison with the corpus and the upsert of the stage (PostgreSQL's window)."""
    ours = parsed("31", "Our copy")
    with transaction.atomic():
        writer = ReferenceWriter(batch_size=1)
        writer.add(ours)  # compared with the corpus (not there yet) and staged
        theirs = ours if same_content else parsed("31", "Their copy")
        Reference.objects.create(
            source=theirs.source,
            source_id=theirs.source_id,
            pmid=theirs.pmid,
            title=theirs.title,
            raw=theirs.raw,
            content_sha256=theirs.content_sha256,
        )
        writer.flush()

    reference = Reference.objects.get(source_id="31")
    assert reference.title == "Our copy"
    assert written(writer) == ((0, 0, 1) if same_content else (0, 1, 0))


@pytest.mark.django_db
def test_an_unchanged_reference_is_left_alone_and_a_changed_one_updated_by_a_later_writer():
    with transaction.atomic():
        first = ReferenceWriter()
        for number in range(5):
            first.add(parsed(str(40 + number), f"Title {number}"))
        first.flush()
    with transaction.atomic():
        second = ReferenceWriter(batch_size=2)
        for number in range(6):
            second.add(parsed(str(40 + number), f"Title {number}" if number != 2 else "Changed"))
        second.flush()

    assert written(first) == (5, 0, 0)
    assert written(second) == (1, 1, 4)
    assert Reference.objects.get(source_id="42").title == "Changed"
    assert Reference.objects.count() == 6


@pytest.mark.django_db
def test_stored_raw_records_are_compressed_as_the_corpus_column_says(needs_postgres):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = 'literature_reference'::regclass "
            "AND attname = 'raw'"
        )
        (column_compression,) = cursor.fetchone()
    long_title = "Senescent cells accumulate in ageing muscle " * 200  # a raw record of about 9 kB
    references_import(file=io.BytesIO(pubmed_set(pubmed_article("61", long_title[:1990]))), format="pubmed_xml")
    reference = Reference.objects.get(source_id="61")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(raw) FROM literature_reference WHERE id = %s", [reference.pk])
        (compression,) = cursor.fetchone()
    assert compression == ("lz4" if column_compression == "l" else "pglz")


@pytest.mark.django_db
def test_stored_abstracts_are_compressed_as_the_corpus_column_says(needs_postgres):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = 'literature_reference'::regclass "
            "AND attname = 'abstract'"
        )
        (column_compression,) = cursor.fetchone()
    with transaction.atomic():
        writer = ReferenceWriter()
        writer.add(parsed("62", "A long abstract", abstract="Senescent cells accumulate in ageing muscle " * 200))
        writer.flush()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(abstract) FROM literature_reference WHERE source_id = '62'")
        (compression,) = cursor.fetchone()
    assert compression == ("lz4" if column_compression == "l" else "pglz")


@pytest.mark.django_db(transaction=True)
def test_a_file_failing_while_its_references_are_being_copied_imports_nothing_and_the_next_import_works():
    """Outside a test's transaction: the import's own transaction rolls back while its COPY into the stage is open."""
    articles = [pubmed_article(str(300_000 + n), f"Record {n}") for n in range(30)]
    content = pubmed_set(*articles)
    with pytest.raises(ImportInvalid):
        references_import(file=io.BytesIO(content[: content.rindex(b"</PubmedArticle>")]), format="pubmed_xml")
    assert not Reference.objects.exists()

    summary = references_import(file=io.BytesIO(content), format="pubmed_xml")
    assert (summary.created, Reference.objects.count()) == (30, 30)


# Re-imports: articles the corpus holds byte for byte ---------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["pubmed_efetch.xml", "pubmed_malformed.xml", "pubmed_titleless.xml"])
def test_reimporting_an_unchanged_file_answers_as_the_first_import_did(name):
    first = references_import(file=fixture(name), format="pubmed_xml")
    again = references_import(file=fixture(name), format="pubmed_xml")

    assert (again.records, again.created, again.updated, again.unchanged) == (first.records, 0, 0, first.records)
    assert (again.skipped, again.warnings, again.repeated) == (first.skipped, first.warnings, first.repeated)


@pytest.mark.django_db
def test_a_known_article_repeated_in_a_file_is_skipped_as_a_repeat():
    article = pubmed_article("71", "Known record")
    references_import(file=io.BytesIO(pubmed_set(article)), format="pubmed_xml")
    summary = references_import(
        file=io.BytesIO(pubmed_set(article, article, pubmed_article("71", "Known record, changed"))),
        format="pubmed_xml",
    )
    assert (summary.records, summary.unchanged, summary.repeated) == (1, 1, 1)
    assert [entry["record"] for entry in summary.skipped] == [3]


@pytest.mark.django_db
def test_an_article_stored_byte_for_byte_is_counted_unchanged_without_being_read_again(needs_postgres):
    references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")
    # As if an earlier release had hashed the record's content otherwise: reading it again would update it.
    Reference.objects.filter(source_id="7654321").update(content_sha256="0" * 64)

    again = references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")
    assert (again.created, again.updated, again.unchanged) == (0, 0, 5)

    changed = (
        fixture("pubmed_efetch.xml").read_bytes().replace(b'<PMID Version="1">7654321', b"<PMID Version='1'>7654321")
    )
    third = references_import(file=io.BytesIO(changed), format="pubmed_xml")
    assert (third.updated, third.unchanged) == (1, 4)  # other bytes: read again, and its content hash differs
    assert Reference.objects.get(source_id="7654321").content_sha256 != "0" * 64


@pytest.mark.django_db
def test_a_file_breaking_off_after_known_articles_imports_nothing():
    articles = [pubmed_article(str(800 + n), f"Record {n}") for n in range(3)]
    references_import(file=io.BytesIO(pubmed_set(*articles)), format="pubmed_xml")
    content = pubmed_set(*articles, pubmed_article("900", "New record"))
    with pytest.raises(ImportInvalid) as raised:
        references_import(file=io.BytesIO(content[: content.rindex(b"</PubmedArticle>")]), format="pubmed_xml")
    assert "not well-formed after record 3" in raised.value.records[0]["message"]
    assert not Reference.objects.filter(source_id="900").exists()
    assert ReferenceImport.objects.count() == 1


DOCTYPE = '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" "pubmed_250101.dtd">'
HELD = [pubmed_article(str(810 + n), f"Held {n}") for n in range(5)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "breaking",
    [
        pytest.param(lambda content: content[: content.rindex(b"</PubmedArticle>")], id="truncated"),
        pytest.param(lambda content: content.replace(b"Held 3</ArticleTitle>", b"Held 3</Title>"), id="mismatched"),
        pytest.param(
            lambda content: content.replace(
                b"<PubmedArticle><MedlineCitation><PMID>813", b"&nbsp;<PubmedArticle><MedlineCitation><PMID>813"
            ),
            id="entity",
        ),
        pytest.param(
            lambda content: content.replace(b"?>\n", b"?>\n" + DOCTYPE.encode()).replace(
                b"<PubmedArticle><MedlineCitation><PMID>813", b"&nbsp;<PubmedArticle><MedlineCitation><PMID>813"
            ),
            id="entity-with-doctype",
        ),
        pytest.param(lambda content: content + b"<More/>", id="after-the-end"),
        pytest.param(
            lambda content: content.replace(b"<PubmedArticleSet>", b"<Other>").replace(
                b"</PubmedArticleSet>", b"</Other>"
            ),
            id="outer-element",
        ),
    ],
)
def test_a_broken_file_the_corpus_mostly_holds_is_refused_as_when_nothing_is_held(needs_postgres, breaking):
    """Read lightly (most of its first articles held), a file that is not well formed is refused with the same
    words, after the same record, as when it is parsed."""
    broken = breaking(pubmed_set(*HELD))
    with pytest.raises(ImportInvalid) as parsed_whole:
        references_import(file=io.BytesIO(broken), format="pubmed_xml")
    references_import(file=io.BytesIO(pubmed_set(*HELD)), format="pubmed_xml")

    with pytest.raises(ImportInvalid) as read_lightly:
        references_import(file=io.BytesIO(broken), format="pubmed_xml")

    assert read_lightly.value.records == parsed_whole.value.records
    assert "Held" not in str(parsed_whole.value.records) and Reference.objects.count() == len(HELD)


def test_reading_asks_which_articles_are_held_only_of_those_it_has_not_yet_given_out():
    """A corpus that takes in each article as it is read (as a file import's writer does) is asked only about
    articles not yet read: one it has just taken in is never taken for one it held before."""
    content = pubmed_set(*(pubmed_article(str(4_000 + n), f"New {n}") for n in range(1_500)))
    corpus: dict[str, tuple[str, str, bool]] = {}
    given: set[str] = set()
    asked: list[str] = []
    asked_after_given: set[str] = set()

    def held(digests: dict[str, str]) -> dict[str, tuple[str, str, bool]]:
        asked.extend(digests)
        asked_after_given.update(given.intersection(digests))
        return {pmid: corpus[pmid] for pmid in digests if pmid in corpus}

    for parsed in pubmed_xml.read(io.BytesIO(content), known=held):
        reference = parsed.reference
        given.add(reference.source_id)
        corpus[reference.source_id] = (reference.raw_digest, reference.content_sha256, reference.published is None)

    assert len(given) == 1_500
    assert asked_after_given == set()
    assert len(asked) == pubmed_xml.KNOWN_BATCH + 2 * 50  # the first batch, then a look ahead after each batch


@pytest.mark.django_db
def test_a_reimport_reads_changed_and_new_articles_among_held_ones_from_their_bytes(needs_postgres):
    held = [pubmed_article(str(2_000 + n), f"Held {n}") for n in range(600)]
    references_import(file=io.BytesIO(pubmed_set(*held)), format="pubmed_xml")
    changed = pubmed_article("2003", "Held 3, retitled", month="Foo")
    book = (
        "<PubmedBookArticle><BookDocument><PMID>2999</PMID><ArticleTitle>A chapter</ArticleTitle><Book>"
        "<BookTitle>A book</BookTitle><PubDate><Year>2021</Year></PubDate></Book></BookDocument></PubmedBookArticle>"
    )
    content = pubmed_set(*held[:3], changed, *held[4:], pubmed_article("2998", "New one"), book)

    summary = references_import(file=io.BytesIO(content), format="pubmed_xml")

    assert (summary.records, summary.created, summary.updated, summary.unchanged) == (602, 2, 1, 599)
    assert [(warning["record"], warning["id"]) for warning in summary.warnings] == [(4, "2003")]
    assert Reference.objects.get(source_id="2003").title == "Held 3, retitled"
    assert Reference.objects.get(source_id="2999").journal == "A book"


@pytest.mark.django_db
def test_a_reimport_of_a_file_declaring_entities_reads_its_changed_articles_with_them(needs_postgres):
    prolog = b"<?xml version='1.0'?>\n<!DOCTYPE PubmedArticleSet [<!ENTITY lab \"Laboratory\">]>\n"
    articles = [pubmed_article(str(3_000 + n), f"Held {n} &lab;") for n in range(5)]
    content = pubmed_set(*articles).replace(b"<?xml version='1.0'?>\n", prolog)
    references_import(file=io.BytesIO(content), format="pubmed_xml")

    again = references_import(
        file=io.BytesIO(content.replace(b"Held 4 &lab;", b"Held 4, the &lab;")), format="pubmed_xml"
    )

    assert (again.updated, again.unchanged) == (1, 4)
    assert Reference.objects.get(source_id="3004").title == "Held 4, the Laboratory"


@pytest.mark.django_db
def test_known_and_new_articles_in_long_runs_of_either_are_each_counted_once():
    """Past a batch of known articles reading switches to new ones and back (pubmed_xml.KNOWN_BATCH)."""
    known = [pubmed_article(str(1_000 + n), f"Known {n}") for n in range(700)]
    new = [pubmed_article(str(5_000 + n), f"New {n}") for n in range(700)]
    later = [pubmed_article(str(9_000 + n), f"Later {n}") for n in range(50)]
    references_import(file=io.BytesIO(pubmed_set(*known)), format="pubmed_xml")

    summary = references_import(file=io.BytesIO(pubmed_set(*known, *new, *known[:600], *later)), format="pubmed_xml")

    assert (summary.records, summary.created, summary.unchanged, summary.repeated) == (1450, 750, 700, 600)
    assert Reference.objects.count() == 1450
    assert Reference.objects.get(source_id="9049").title == "Later 49"


@pytest.mark.django_db
def test_every_written_reference_keeps_the_digest_of_its_raw_record():
    references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")
    references_import(file=fixture("references.ris"), format="ris")
    with transaction.atomic():
        writer = ReferenceWriter(batch_size=1)
        writer.add(parsed("81", "Written by a writer"))
        writer.flush()
    stored = list(Reference.objects.values_list("raw", "raw_digest"))
    assert len(stored) > 6
    assert all(digest == xxhash.xxh3_128_digest(raw.encode()) for raw, digest in stored)


# A file import's batches copied straight into the corpus (PostgreSQL) ----------------------------------------------


@pytest.mark.django_db
def test_a_batch_meeting_a_stored_reference_goes_through_the_stage_and_the_batches_before_it_stay():
    with transaction.atomic():
        first = ReferenceWriter()
        first.add(parsed("91", "Stored before"))
        first.flush()
    with transaction.atomic():
        writer = ReferenceWriter(batch_size=2, distinct_keys=True)
        for reference in [
            parsed("92", "New in the first batch"),
            parsed("93", "Also new"),
            parsed("94", "New, in the batch that meets the stored one"),
            parsed("91", "Stored before, changed"),
            parsed("95", "New, after it"),
        ]:
            writer.add(reference)
        writer.flush()

    assert written(writer) == (4, 1, 0)
    assert sorted(Reference.objects.values_list("source_id", "title")) == [
        ("91", "Stored before, changed"),
        ("92", "New in the first batch"),
        ("93", "Also new"),
        ("94", "New, in the batch that meets the stored one"),
        ("95", "New, after it"),
    ]


@pytest.mark.django_db
def test_values_a_text_copy_escapes_are_stored_as_the_file_gave_them():
    abstract = "Tab\there, a backslash \\ and \\N, a line\nfeed, β-catenin and “quotes”."
    raw = f"TY  - JOUR\nTI  - Escapes\tin a title \\N\nAB  - {abstract}\nER  - "
    references_import(file=io.BytesIO(raw.encode()), format="ris")

    reference = Reference.objects.get()
    assert reference.raw == raw
    assert reference.raw_digest == xxhash.xxh3_128_digest(raw.encode())
    assert reference.title == "Escapes in a title \\N"
    assert reference.abstract == " ".join(abstract.split())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("same_content", [True, False])
def test_an_import_meeting_a_reference_another_import_is_writing_waits_for_it_and_never_duplicates_it(
    needs_postgres, same_content
):
    """The other import holds the row uncommitted: this one's COPY waits on it, then meets it once it commits."""
    ours = [pubmed_article("3101", "Ours alone"), pubmed_article("3102", "Both imports")]
    (theirs,) = pubmed_xml.read(
        io.BytesIO(pubmed_set(pubmed_article("3102", "Both imports" if same_content else "Their copy")))
    )
    other = psycopg.connect(**_connection_parameters())
    values = _staged_row(theirs.reference)
    other.execute(
        f"INSERT INTO literature_reference ({', '.join(_STAGED_COLUMNS)}, created_at, updated_at) "
        f"VALUES ({', '.join(['%s'] * len(values))}, now(), now())",
        [Jsonb(value) if isinstance(value, list) else value for value in values],
    )
    committing = threading.Thread(target=_commit_once_waited_on, args=(other,))
    committing.start()
    try:
        summary = references_import(file=io.BytesIO(pubmed_set(*ours)), format="pubmed_xml")
    finally:
        committing.join()
        other.close()

    assert (summary.created, summary.updated, summary.unchanged) == ((1, 0, 1) if same_content else (1, 1, 0))
    assert Reference.objects.filter(source_id="3102").count() == 1
    assert Reference.objects.get(source_id="3102").title == "Both imports"


def _connection_parameters() -> dict:
    settings = connection.settings_dict
    return {
        "dbname": settings["NAME"],
        "user": settings["USER"],
        "host": settings["HOST"],
        "port": settings["PORT"] or 5432,
        "password": settings["PASSWORD"],
    }


def _commit_once_waited_on(other, timeout: float = 60) -> None:
    """Commit the other connection's transaction once another backend waits on it (or after timeout seconds)."""
    with psycopg.connect(**_connection_parameters(), autocommit=True) as watcher:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            (blocked,) = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", [other.info.backend_pid]
            ).fetchone()
            if blocked:
                break
            time.sleep(0.05)
    other.commit()


@pytest.mark.django_db
def test_changed_records_met_while_their_batch_is_open_are_updated_once_each_and_new_ones_created():
    """A look-up between batches ends the one open, which meets the stored references it changes."""

    def ris(titles: dict[int, str]) -> bytes:
        return "".join(
            f"TY  - JOUR\nTI  - {title}\nID  - r{n}\nPY  - 2020\nER  - \n\n" for n, title in titles.items()
        ).encode()

    references_import(file=io.BytesIO(ris({n: f"Record {n}" for n in range(600)})), format="ris")
    changed = {n: f"Record {n}, revised" for n in range(0, 600, 2)}
    new = {n: f"Record {n}" for n in range(600, 1300)}

    summary = references_import(file=io.BytesIO(ris({**changed, **new})), format="ris")

    assert (summary.created, summary.updated, summary.unchanged) == (700, 300, 0)
    assert Reference.objects.count() == 1300
    assert Reference.objects.get(source_id="id:r2").title == "Record 2, revised"
    assert Reference.objects.get(source_id="id:r3").title == "Record 3"
