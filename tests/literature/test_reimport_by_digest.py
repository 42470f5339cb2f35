"""Re-importing MEDLINE and RIS files: a record the corpus holds byte for byte (by the digest of its raw record) is
counted unchanged without being parsed again, and answers the same warnings as when it was first read; a record
with other bytes is parsed and written as before, so a changed record among unchanged ones is updated and a repeat
with other content is still refused. The text is read a block at a time: lines, line numbers and line ends are
those of the file whatever block they fall in."""

import io
import sys

import pytest
import xxhash

from literature.importers import medline
from literature.importers.records import KNOWN_BATCH, TEXT_BLOCK, FileUnreadable
from literature.models import Reference
from literature.services import ImportInvalid, references_import
from tests.literature.test_literature_importers import fixture

MEDLINE_WITH_WARNINGS = (
    b"PMID- 1\nTI  - Fine record\nDP  - 2020\n\n"
    b"PMID- 2\nTI  - Broken line below\nthis line has no tag\nDP  - 2020 Feb 30\n\n"
    b"      continuation before any tag\nPMID- 3\nTI  - Starts indented\nDP  - Spring\n\n"
    b"TI  - No PMID at all\n"
)
RIS_WITH_WARNINGS = (
    b"stray text\n"
    b"TY  - JOUR\nTI  - Fine\nPY  - 2020\nER  - \n"
    b"TY  - JOUR\nTI  - Dated twice\nPY  - 2019\nDA  - someday\nDO  - 10.1000/\n  wrapped\nER  - \n"
    b"TY  - JOUR\nTI  - Bad year, good date\nPY  - 20x0\nDA  - 2020/05/04\nDO  - not-a-doi\n"
    b"TY  - JOUR\nPY  - 20x0\nER  - \n"
    b"AU  - Orphan, Tag\n"
    b"TY  - JOUR\nTI  - Never closed\nDO  - not-a-doi\n"
)

WOS_WITH_WARNINGS = (
    b"FN Clarivate Analytics Web of Science\nVR 1.0\n"
    b"PT J\nTI Fine\nPY 2020\nUT WOS:000000000000001\nER\n\n"
    b"PT J\nTI Bad DOI, dated\nDI not-a-doi\nPY 2020\nUT WOS:000000000000002\nER\n\n"
    b"PT J\nTI Bad PMID, dated\nPM 12ab\nPY 2020\nUT WOS:000000000000003\nER\n\n"
    b"PT J\nTI Bad date\nPY 20x0\nUT WOS:000000000000004\nER\n\n"
    b"PT J\nTI No end\nPY 2020\nUT WOS:000000000000005\n"
    b"PT J\nTI Fine again\nPY 2020\nUT WOS:000000000000006\nER\n\nEF\n"
)


def medline_record(pmid: int, title: str) -> str:
    return f"PMID- {pmid}\nTI  - {title}\nDP  - 2021 Mar\nAB  - An abstract\n      wrapped once.\nFAU - Doe, Jane\n\n"


def ris_record(number: int, title: str) -> str:
    return f"TY  - JOUR\nTI  - {title}\nPY  - 2021\nDO  - 10.1000/r{number}\nAU  - Doe, Jane\nER  - \n\n"


def answers(summary) -> tuple:
    return (summary.records, summary.skipped, summary.warnings, summary.repeated)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "format"),
    [
        (MEDLINE_WITH_WARNINGS, "medline"),
        (RIS_WITH_WARNINGS, "ris"),
        (fixture("pubmed.nbib").read_bytes(), "medline"),
        (fixture("pubmed_titleless.nbib").read_bytes(), "medline"),
        (fixture("biopython_medline_pubmed_result2.txt").read_bytes(), "medline"),
        (fixture("references.ris").read_bytes(), "ris"),
        (fixture("endnote_export.ris").read_bytes(), "ris"),
        (fixture("ovid_numbered.ris").read_bytes(), "ris"),
        (fixture("asreview_embase.ris").read_bytes(), "ris"),
        (fixture("asreview_ovid_psycinfo.ris").read_bytes(), "ris"),
        (fixture("asreview_scopus.ris").read_bytes(), "ris"),
        (fixture("asreview_zotero_crlf.ris").read_bytes(), "ris"),
        (fixture("asreview_pubmed_zotero.ris").read_bytes(), "ris"),
        (fixture("asreview_pubmed_endnote.txt").read_bytes(), "ris"),
        (WOS_WITH_WARNINGS, "wos"),
        (WOS_WITH_WARNINGS.replace(b"\n", b"\r\n"), "wos"),
        (fixture("wos_bibx_savedrecs.txt").read_bytes(), "wos"),
        (fixture("wos_metaknowledge_twopaper.isi").read_bytes(), "wos"),
        (fixture("wos_wosfile_tab_delimited.txt").read_bytes(), "wos"),
    ],
)
def test_a_reimport_answers_the_warnings_and_skips_of_the_first_import(content, format):
    first = references_import(file=io.BytesIO(content), format=format)
    again = references_import(file=io.BytesIO(content), format=format)

    assert (again.created, again.updated, again.unchanged) == (0, 0, first.records)
    assert answers(again) == answers(first)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "format", "warned"),
    [
        (MEDLINE_WITH_WARNINGS, "medline", [(2, "line"), (2, "published"), (3, "line"), (3, "published")]),
        (
            RIS_WITH_WARNINGS,
            "ris",
            [(2, "doi"), (2, "published"), (3, "ER"), (3, "doi"), (3, "published"), (5, "ER"), (5, "doi")],
        ),
    ],
)
def test_a_stored_record_is_warned_about_again_as_when_it_was_first_read(content, format, warned):
    references_import(file=io.BytesIO(content), format=format)
    again = references_import(file=io.BytesIO(content), format=format)

    assert again.created == again.updated == 0
    assert [(warning["record"], warning["field"]) for warning in again.warnings] == warned


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "format", "warned"),
    [
        (MEDLINE_WITH_WARNINGS, "medline", {"Fine record": False, "Broken line below": True, "Starts indented": True}),
        (RIS_WITH_WARNINGS, "ris", {"Fine": False, "Dated twice": True, "Bad year, good date": True}),
    ],
)
def test_each_record_a_file_import_stores_tells_whether_reading_it_gave_warnings(content, format, warned):
    references_import(file=io.BytesIO(content), format=format)

    stored = dict(Reference.objects.filter(title__in=warned).values_list("title", "raw_warned"))
    assert stored == warned


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "format", "warned", "told_none"),
    [
        (
            MEDLINE_WITH_WARNINGS,
            "medline",
            [(2, "line"), (2, "published"), (3, "line"), (3, "published")],
            [],
        ),
        (
            RIS_WITH_WARNINGS,
            "ris",
            [(2, "doi"), (2, "published"), (3, "ER"), (3, "doi"), (3, "published"), (5, "ER"), (5, "doi")],
            [(3, "ER"), (5, "ER")],  # where a record ends is read with the file, not from what is stored
        ),
    ],
)
def test_a_stored_record_is_looked_at_again_for_warnings_unless_it_had_none(content, format, warned, told_none):
    references_import(file=io.BytesIO(content), format=format)
    Reference.objects.update(raw_warned=None)  # stored before imports told
    not_told = references_import(file=io.BytesIO(content), format=format)
    Reference.objects.update(raw_warned=False)
    none = references_import(file=io.BytesIO(content), format=format)

    assert [(warning["record"], warning["field"]) for warning in not_told.warnings] == warned
    assert [(warning["record"], warning["field"]) for warning in none.warnings] == told_none


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("format", "record", "source_id"),
    [("medline", medline_record, "3"), ("ris", ris_record, "doi:10.1000/r3")],
)
def test_a_record_stored_byte_for_byte_is_not_parsed_again_and_a_changed_one_is(format, record, source_id):
    content = "".join(record(number, f"Title {number}") for number in range(1, 6))
    references_import(file=io.BytesIO(content.encode()), format=format)
    # As if an earlier release had hashed the content otherwise: parsing the record again would update it.
    Reference.objects.filter(source_id=source_id).update(content_sha256="0" * 64)

    again = references_import(file=io.BytesIO(content.encode()), format=format)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 5)
    assert Reference.objects.get(source_id=source_id).content_sha256 == "0" * 64

    changed = content.replace("Title 3", "Title 3, corrected")
    third = references_import(file=io.BytesIO(changed.encode()), format=format)
    assert (third.created, third.updated, third.unchanged) == (0, 1, 4)
    stored = Reference.objects.get(source_id=source_id)
    assert stored.title == "Title 3, corrected" and stored.content_sha256 != "0" * 64


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "format"),
    [
        (fixture("biopython_medline_pubmed_result2.txt").read_bytes(), "medline"),
        (fixture("asreview_zotero_crlf.ris").read_bytes(), "ris"),
        (fixture("endnote_export.ris").read_bytes(), "ris"),
    ],
)
def test_the_digest_stored_with_each_record_is_that_of_its_raw_record_when_new_and_when_updated(content, format):
    """The readers pass on the digest they looked a record up by: it must be the stored raw record's own."""
    references_import(file=io.BytesIO(content), format=format)
    Reference.objects.update(content_sha256="0" * 64, raw_digest=b"0" * 16)  # as if stored otherwise: all updated
    again = references_import(file=io.BytesIO(content), format=format)

    stored = list(Reference.objects.values_list("raw", "raw_digest"))
    assert again.updated == len(stored) > 0
    assert all(digest == xxhash.xxh3_128_digest(raw.encode()) for raw, digest in stored)


@pytest.mark.django_db
@pytest.mark.parametrize(("format", "record"), [("medline", medline_record), ("ris", ris_record)])
def test_changed_and_new_records_among_many_stored_ones_are_written_and_only_they(format, record):
    count = 2 * KNOWN_BATCH + 30
    references_import(file=io.BytesIO("".join(record(n, f"Title {n}") for n in range(count)).encode()), format=format)
    changed = {7, KNOWN_BATCH, count - 1}
    content = "".join(record(n, f"Title {n}" + (", revised" if n in changed else "")) for n in range(count + 20))

    summary = references_import(file=io.BytesIO(content.encode()), format=format)

    assert (summary.records, summary.created, summary.updated, summary.unchanged) == (
        count + 20,
        20,
        len(changed),
        count - len(changed),
    )
    revised = Reference.objects.filter(source=Reference.Source.RIS if format == "ris" else "pubmed")
    assert revised.filter(title__endswith=", revised").count() == len(changed)
    assert revised.count() == count + 20


@pytest.mark.django_db
@pytest.mark.parametrize(("format", "record"), [("medline", medline_record), ("ris", ris_record)])
def test_a_stored_record_repeated_in_the_file_and_a_conflicting_copy_are_skipped(format, record):
    references_import(file=io.BytesIO(record(1, "Stored").encode()), format=format)
    content = record(1, "Stored") + record(1, "Stored") + record(1, "Stored, with other content")

    summary = references_import(file=io.BytesIO(content.encode()), format=format)

    assert (summary.records, summary.unchanged, summary.repeated) == (1, 1, 1)
    assert [entry["record"] for entry in summary.skipped] == [3]
    assert "Record 1 has the same id with different content" in summary.skipped[0]["reason"]
    assert Reference.objects.get().title == "Stored"


@pytest.mark.django_db
@pytest.mark.parametrize(("format", "record"), [("medline", medline_record), ("ris", ris_record)])
def test_a_file_of_many_blocks_with_windows_line_ends_reads_as_with_line_feeds(format, record):
    count = TEXT_BLOCK // 90  # each record is over 90 bytes: the file spans blocks, records straddle them
    content = "".join(record(n, f"Title {n} – Zoë") for n in range(1, count)).encode()
    assert len(content) > TEXT_BLOCK

    crlf = references_import(file=io.BytesIO(content.replace(b"\n", b"\r\n")), format=format)
    stored = dict(Reference.objects.values_list("source_id", "title"))
    Reference.objects.all().delete()
    lf = references_import(file=io.BytesIO(content), format=format)

    assert (crlf.records, crlf.created, crlf.warnings) == (count - 1, count - 1, []) == (lf.records, lf.created, [])
    assert stored == dict(Reference.objects.values_list("source_id", "title"))
    assert all("\r" not in raw for raw in Reference.objects.values_list("raw", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize(("format", "record"), [("medline", medline_record), ("ris", ris_record)])
def test_bytes_that_are_not_utf8_past_the_first_block_name_their_line_and_import_nothing(format, record):
    lines = "".join(record(n, f"Title {n}") for n in range(1, TEXT_BLOCK // 60)).encode()
    assert len(lines) > TEXT_BLOCK
    content = lines + b"TI  - caf\xe9\n" + lines
    bad_line = lines.count(b"\n") + 1

    with pytest.raises(ImportInvalid) as raised:
        references_import(file=io.BytesIO(content), format=format)
    problems = raised.value.records
    assert [problem["message"] for problem in problems] == [
        f"Line {bad_line} is not UTF-8 text: save the file as UTF-8."
    ]
    assert not Reference.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("format", "record"), [("medline", medline_record), ("ris", ris_record)])
def test_stored_records_after_a_long_run_of_new_ones_are_each_counted_once(format, record):
    """A batch of new records is asked about by a sample; stored ones after it are found again (SampledLookup)."""
    stored = range(KNOWN_BATCH + 100)
    new = range(10_000, 10_000 + 2 * KNOWN_BATCH)
    references_import(file=io.BytesIO("".join(record(n, f"Title {n}") for n in stored).encode()), format=format)
    content = "".join(
        [record(n, f"New {n}") for n in new]
        + [record(n, f"Title {n}" if n != 5 else "Title 5, revised") for n in stored]
        + [record(n, f"New {n}") for n in new][:3]
    )

    summary = references_import(file=io.BytesIO(content.encode()), format=format)

    assert (summary.created, summary.updated, summary.unchanged, summary.repeated) == (
        len(new),
        1,
        len(stored) - 1,
        3,
    )
    assert Reference.objects.count() == len(stored) + len(new)


@pytest.mark.django_db
def test_ris_records_with_blank_lines_and_windows_line_ends_are_stored_without_them_and_found_again():
    """A record is cut from the bytes whole; blank lines (no-break spaces included) and carriage returns are left
    out of its raw record, which a re-import then finds by its digest, whatever the file's line ends."""
    records = [
        ris_record(1, "Plain"),
        ris_record(2, "Blank line inside").replace("PY  - 2021\n", "PY  - 2021\n   \n"),
        ris_record(3, "No-break space inside").replace("PY  - 2021\n", "PY  - 2021\n\u00a0\n"),
        ris_record(4, "Zoë"),
    ]
    content = "".join(records).encode()
    first = references_import(file=io.BytesIO(content), format="ris")
    raws = list(Reference.objects.order_by("source_id").values_list("raw", flat=True))

    crlf = references_import(file=io.BytesIO(content.replace(b"\n", b"\r\n")), format="ris")
    again = references_import(file=io.BytesIO(content), format="ris")

    assert (first.created, first.warnings) == (4, [])
    assert all("\n\n" not in raw and "\u00a0" not in raw and "\r" not in raw for raw in raws)
    assert (crlf.unchanged, again.unchanged) == (4, 4)
    assert list(Reference.objects.order_by("source_id").values_list("raw", flat=True)) == raws


@pytest.mark.django_db
def test_bytes_that_are_not_utf8_inside_a_ris_record_past_the_first_block_name_their_line():
    lines = "".join(ris_record(n, f"Title {n}") for n in range(1, TEXT_BLOCK // 60)).encode()
    bad = ris_record(0, "caf\udce9").encode("utf-8", "surrogateescape")
    content = lines + bad + lines
    bad_line = lines.count(b"\n") + 2

    for known_first in (False, True):
        if known_first:  # the records before it stored: they are skipped by their digest, the bad one is read
            references_import(file=io.BytesIO(lines), format="ris")
        with pytest.raises(ImportInvalid) as raised:
            references_import(file=io.BytesIO(content), format="ris")
        assert [problem["message"] for problem in raised.value.problems] == [
            f"Line {bad_line} is not UTF-8 text: save the file as UTF-8."
        ]


# ------------------------------------------------------------------------------------------ MEDLINE blank lines

# Lines blank but not empty, as MEDLINE files from other tools part records: spaces, tabs, a file separator control
# character, no-break and ideographic spaces (blank once decoded).
BLANK_LINES = {
    "spaces": "   ",
    "tab and space": "\t ",
    "control character": "\x1c",
    "no-break space": "\u00a0",
    "ideographic and no-break spaces": "\u3000 \u00a0",
}


@pytest.mark.django_db
@pytest.mark.parametrize("line_end", ["\n", "\r\n"], ids=["LF", "CRLF"])
@pytest.mark.parametrize("blank", BLANK_LINES.values(), ids=BLANK_LINES.keys())
def test_medline_records_parted_by_lines_of_spaces_read_as_parted_by_empty_lines(blank, line_end):
    """Records cut out of the file's bytes: a line of spaces of any kind ends a record, and neither it nor carriage
    returns are kept in the raw records, which a re-import then finds by their digests."""
    plain = "".join(medline_record(number, f"Title {number} – Zoë") for number in (1, 2, 3))
    parted = f"{blank}\n" + plain.replace("\n\n", f"\n{blank}\n", 2).replace("\n\n", f"\n{blank}\n{blank}\n")
    content = parted.replace("\n", line_end).encode()

    first = references_import(file=io.BytesIO(content), format="medline")
    raws = dict(Reference.objects.values_list("source_id", "raw"))
    again = references_import(file=io.BytesIO(content), format="medline")
    Reference.objects.all().delete()
    references_import(file=io.BytesIO(plain.encode()), format="medline")

    assert (first.records, first.created, first.warnings) == (3, 3, [])
    assert again.unchanged == 3
    assert raws == dict(Reference.objects.values_list("source_id", "raw"))
    assert all(line.strip() and "\r" not in line for raw in raws.values() for line in raw.split("\n"))


@pytest.mark.parametrize(
    "space", [chr(code) for code in range(0x80, sys.maxunicode + 1) if chr(code).isspace()], ids=ascii
)
def test_a_line_of_any_space_besides_ascii_ones_parts_medline_records(space):
    content = f"PMID- 1\nTI  - One\n{space}\nPMID- 2\nTI  - Two\n".encode()

    parsed = list(medline.read(io.BytesIO(content)))

    assert [(item.number, item.reference.title) for item in parsed] == [(1, "One"), (2, "Two")]
    assert [item.reference.raw for item in parsed] == ["PMID- 1\nTI  - One", "PMID- 2\nTI  - Two"]


# The lines of a record and those around it, one of which is made to straddle the end of the first block read.
STRADDLING = [
    "PMID- 900\n",
    "TI  - Over the boundary\n",
    "no tag here\n",
    "AB  - An abstract\n",
    "      wrapped over two lines.\n",
    "   \n",
    "PMID- 901\n",
    "TI  - After it\n",
    "\n",
]


@pytest.mark.django_db
@pytest.mark.parametrize("straddling", range(len(STRADDLING) - 1), ids=[line.strip() for line in STRADDLING[:-1]])
def test_a_medline_record_over_the_end_of_a_read_block_is_read_whole_with_its_line_numbers(straddling):
    count = (TEXT_BLOCK - 1000) // len(medline_record(100_000, "Title 100000"))
    filler = "".join(medline_record(number, f"Title {number}") for number in range(100_000, 100_000 + count))
    # A padding record's title sized so that the line `straddling` starts just before the first block's end.
    before = "".join(STRADDLING[:straddling])
    title = "x" * (TEXT_BLOCK - 1 - len(filler) - len("PMID- 899\nTI  - \n\n") - len(before))
    head = (filler + f"PMID- 899\nTI  - {title}\n\n").encode()
    content = head + "".join(STRADDLING).encode()
    assert len(head) + len(before) == TEXT_BLOCK - 1 and 0 < len(title) < 2000
    untagged_line = (head + "".join(STRADDLING[:2]).encode()).count(b"\n") + 1

    summary = references_import(file=io.BytesIO(content), format="medline")

    records = count + 3
    assert (summary.records, summary.created) == (records, records)
    assert [(warning["record"], warning["message"]) for warning in summary.warnings] == [
        (records - 1, f"Line {untagged_line} is neither a “TAG - value” line nor a continuation; it was ignored.")
    ]
    over = Reference.objects.get(source_id="900")
    assert (over.title, over.abstract) == ("Over the boundary", "An abstract wrapped over two lines.")
    assert over.raw == "".join(STRADDLING[:5]).strip()
    assert over.raw_digest == xxhash.xxh3_128_digest(over.raw.encode())
    assert Reference.objects.get(source_id="901").raw == "PMID- 901\nTI  - After it"


@pytest.mark.parametrize("known", [False, True], ids=["new", "looked up"])
@pytest.mark.parametrize("parted_by", ["\n", "\u00a0\n"], ids=["empty line", "no-break space line"])
def test_the_medline_records_before_bytes_that_are_not_utf8_past_the_first_block_are_read_and_no_other(
    parted_by, known
):
    good = "".join(medline_record(number, f"Title {number}") for number in range(1, TEXT_BLOCK // 60))
    bad = "PMID- 0\nTI  - Before the bad line\nAB  - caf\udce9\n\n"
    content = (good[:-1] + parted_by + bad + good).encode("utf-8", "surrogateescape")
    bad_line = good.count("\n") + 3  # the AB line of the bad record

    read = []
    with pytest.raises(FileUnreadable) as raised:
        for parsed in medline.read(io.BytesIO(content), (lambda source, digests: {}) if known else None):
            read.append(parsed.reference.title)

    assert str(raised.value) == f"Line {bad_line} is not UTF-8 text: save the file as UTF-8."
    assert read == [f"Title {number}" for number in range(1, TEXT_BLOCK // 60)]
