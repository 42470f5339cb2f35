"""Writing references: new ones created, changed ones updated, identical ones left alone, one row per (source, id)
whatever repeats a file or a writer holds and whatever another import wrote meanwhile. On PostgreSQL this is the
staging table's COPY and its one upsert; on SQLite the batch upserts; the counts are the same."""

import io

import pytest
from django.db import connection, transaction

from literature.importers.records import ParsedReference
from literature.models import Reference
from literature.services import WRITE_BATCH, ReferenceWriter, references_import
from tests.literature.test_literature_importers import pubmed_article, pubmed_set


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
