"""Web of Science (plain text, tab-delimited) and BibTeX imports on exports the databases and reference managers
wrote (tests/fixtures/literature/SOURCES.md), and the format told from a file's content: every record imported,
its fields read, a re-import changing nothing, a wrong declared format refused naming the detected one; the records
found by the corpus page's search and the novelty check's retrieval like any other."""

import io
from datetime import date
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from literature import retrieval
from literature.importers import detection, wos
from literature.importers.records import TEXT_BLOCK
from literature.models import Reference
from literature.services import ImportInvalid, references_import

FIXTURES = Path(__file__).parent.parent / "fixtures" / "literature"
EXPORTS = [
    ("wos_bibx_savedrecs.txt", "wos", 20),
    ("wos_bibx_single_article.txt", "wos", 1),
    ("wos_metaknowledge_twopaper.isi", "wos", 2),
    ("wos_wosfile_tab_delimited.txt", "wos", 2),
    ("bibtex_scopus_bibx.bib", "bibtex", 15),
    ("bibtex_jabref_chocolate.bib", "bibtex", 15),
    ("bibtex_zotero_better_bibtex.bib", "bibtex", 1),
]


def fixture(name: str) -> Path:
    return FIXTURES / name


def by_id() -> dict[str, Reference]:
    return {reference.source_id: reference for reference in Reference.objects.order_by("pk")}


def refused(content: bytes, format: str | None) -> list[dict]:
    with pytest.raises(ImportInvalid) as raised:
        references_import(file=io.BytesIO(content), format=format)
    return raised.value.records


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "format", "count"), EXPORTS)
def test_every_record_of_a_real_export_imports_and_a_reimport_changes_nothing(name, format, count):
    first = references_import(file=fixture(name), format=format)
    assert (first.records, first.created, first.skipped, first.warnings) == (count, count, [], [])
    assert Reference.objects.filter(source=format).count() == count
    again = references_import(file=fixture(name), format=format)
    assert (again.created, again.updated, again.unchanged, again.skipped) == (0, 0, count, [])


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "format", "count"), EXPORTS)
def test_the_format_of_a_real_export_is_told_from_its_content(name, format, count):
    assert detection.detect(fixture(name).read_bytes()[: detection.HEAD]) == format
    summary = references_import(file=fixture(name))
    assert (summary.format, summary.format_detected, summary.records) == (format, True, count)


# ------------------------------------------------------------------------------------------- Web of Science


@pytest.mark.django_db
def test_a_web_of_science_plain_text_export_with_its_byte_order_mark_and_continuation_lines():
    assert fixture("wos_bibx_savedrecs.txt").read_bytes().startswith(b"\xef\xbb\xbfFN Thomson Reuters")
    references_import(file=fixture("wos_bibx_savedrecs.txt"), format="wos")
    solvent = by_id()["WOS:000401190100002"]
    assert solvent.title == (
        "In situ grazing incidence small-angle X-ray scattering study of solvent vapor annealing in "
        "lamellae-forming block copolymer thin films: Trade-off of defects in deswelling"
    )  # three lines joined
    assert solvent.authors == ["Sun, Zhiwei", "Russell, Thomas P."]  # AF, one name a line
    assert solvent.journal == "JOURNAL OF POLYMER SCIENCE PART B-POLYMER PHYSICS"
    assert solvent.doi == "10.1002/polb.24346" and solvent.source == "wos"
    assert solvent.abstract.startswith("Solvent vapor annealing (SVA) is one route")
    assert solvent.raw.startswith("PT J\nAU Sun, ZW\n   Russell, TP\n")


@pytest.mark.django_db
def test_web_of_science_dates_keep_their_precision_and_a_record_without_abstract_imports():
    references_import(file=fixture("wos_metaknowledge_twopaper.isi"), format="wos")
    references_import(file=fixture("wos_bibx_single_article.txt"), format="wos")
    references = by_id()
    supervenience = references["WOS:000086967200001"]
    assert (supervenience.published, supervenience.published_precision) == (date(2000, 3, 1), "month")  # PD MAR
    assert supervenience.doi == "10.1023/a:1005282128866" and supervenience.authors == ["Kim, S"]
    token = references["WOS:000168001500006"]
    assert (token.published, token.published_precision, token.abstract) == (date(2001, 1, 1), "year", "")
    nanodots = references["WOS:000397201600008"]
    assert nanodots.title == "Structural control of ultra-fine CoPt nanodot arrays via electrodeposition process"
    assert nanodots.authors == ["Wodarz, Siggi", "Hasegawa, Takashi", "Ishio, Shunji", "Homma, Takayuki"]


@pytest.mark.django_db
def test_a_web_of_science_tab_delimited_export():
    references_import(file=fixture("wos_wosfile_tab_delimited.txt"), format="wos")
    references = by_id()
    assert list(references) == ["WOS:000220015600001", "WOS:000243494600113"]
    networks = references["WOS:000220015600001"]
    assert networks.title.startswith("Knowledge networks as channels and conduits")
    assert networks.authors == ["Owen-Smith, J", "Powell, WW"]
    assert (networks.published, networks.published_precision) == (date(2004, 1, 1), "month")  # PD JAN-FEB
    assert networks.doi == "10.1287/orsc.1030.0054" and networks.journal == "ORGANIZATION SCIENCE"
    assert len(references["WOS:000243494600113"].authors) == 24


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "count"), [("wos_wosfile_tab_delimited.txt", 2), ("bibtex_jabref_chocolate.bib", 15)])
def test_windows_line_ends_and_a_byte_order_mark_change_nothing(name, count):
    """The Windows exports were written with CR LF and a byte-order mark (SOURCES.md): the same records either way."""
    references_import(file=fixture(name))
    windows = b"\xef\xbb\xbf" + fixture(name).read_bytes().replace(b"\n", b"\r\n")
    again = references_import(file=io.BytesIO(windows))
    assert (again.records, again.created, again.updated, again.skipped) == (count, 0, 0, [])


@pytest.mark.django_db
def test_web_of_science_records_without_title_or_abstract_are_skipped_and_a_missing_er_is_reported():
    content = (
        b"FN Clarivate Analytics Web of Science\nVR 1.0\n"
        b"PT J\nAU Doe, J\nSO JOURNAL OF TESTS\nPY 2020\nUT WOS:000000000000001\nER\n\n"
        b"PT J\nTI A record written for the test whose ER line is missing\nPY 2021\nPD FOO\nUT WOS:000000000000002\n"
        b"PT J\nAB An abstract without a title, written for the test.\nPY 2022\nUT WOS:000000000000003\nER\n\nEF\n"
    )
    summary = references_import(file=io.BytesIO(content), format="wos")
    assert summary.skipped == [
        {"record": 1, "id": "WOS:000000000000001", "reason": "The record has neither a title nor an abstract."}
    ]
    assert [(warning["record"], warning["field"]) for warning in summary.warnings] == [(2, "ER")]
    assert set(by_id()) == {"WOS:000000000000002", "WOS:000000000000003"}
    assert by_id()["WOS:000000000000002"].published == date(2021, 1, 1)  # PD FOO: the year stands


def wos_record(number: int, title: str) -> str:
    """A plain-text record with continuation lines (title, authors), non-ASCII names and a day-precise date."""
    return (
        f"PT J\nAU Doe, J\n   Zoë, M\nAF Doe, Jane\n   Zoë, Marie\nTI {title}\n   continued on a second line\n"
        f"SO JOURNAL OF TESTS\nAB An abstract, for record {number}.\nPD MAR 5\nPY 2021\nUT WOS:{number:015d}\nER\n\n"
    )


@pytest.mark.django_db
def test_a_web_of_science_file_of_many_blocks_reads_every_record_whole_whatever_its_line_ends():
    """The file is read a block at a time (TEXT_BLOCK bytes, ended after a record): every record is read whole, a
    warning past the first block names its line, and the file with Windows line ends gives the same records, found
    again by a re-import."""
    records = [wos_record(number, f"Title {number} – Zoë") for number in range(1, TEXT_BLOCK // 120)]
    unended = 3 * len(records) // 4  # in the second block: its "ER" line is missing
    records[unended] = records[unended].replace("ER\n\n", "")
    content = ("FN Clarivate Analytics Web of Science\nVR 1.0\n" + "".join(records) + "EF\n").encode()
    assert TEXT_BLOCK < content.index(b"WOS:%015d" % (unended + 1)) < len(content) < 2 * TEXT_BLOCK
    next_record_line = (
        content.count(b"\n", 0, content.index(b"PT J\n", content.index(b"WOS:%015d" % (unended + 1)))) + 1
    )

    first = references_import(file=io.BytesIO(content), format="wos")
    raws = dict(Reference.objects.values_list("source_id", "raw"))
    crlf = references_import(file=io.BytesIO(content.replace(b"\n", b"\r\n")), format="wos")
    again = references_import(file=io.BytesIO(content), format="wos")

    assert (first.records, first.created) == (len(records), len(records))
    message = f"The record has no “ER” line; it was ended at line {next_record_line}."
    assert [(warning["record"], warning["message"]) for warning in first.warnings] == [(unended + 1, message)]
    assert all(
        raws[f"WOS:{number:015d}"] == record.rstrip("\n").removesuffix("\nER")
        for number, record in enumerate(records, 1)
    )
    assert (crlf.unchanged, crlf.warnings) == (len(records), first.warnings)
    assert (again.unchanged, again.warnings) == (len(records), first.warnings)


@pytest.mark.django_db
def test_bytes_that_are_not_utf8_in_a_web_of_science_record_past_the_first_block_size_name_their_line():
    records, size = [], 0
    while size < TEXT_BLOCK - 1000:
        records.append(wos_record(len(records) + 1, "Title"))
        size += len(records[-1].encode())
    addresses = "".join(f"   Univ {number}, Dept Tests, Heidelberg, Germany.\n" for number in range(50))
    straddling = f"PT J\nTI Long\nC1 Univ, Heidelberg, Germany.\n{addresses}AB Caf\udce9\nUT WOS:1\nER\n"
    content = ("".join(records) + straddling).encode("utf-8", "surrogateescape")
    assert content.rindex(b"PT J") < TEXT_BLOCK < content.index(b"\xe9")  # the record opens before the block size
    bad_line = content.count(b"\n", 0, content.index(b"\xe9")) + 1

    with pytest.raises(ImportInvalid) as raised:
        references_import(file=io.BytesIO(content), format="wos")
    assert [problem["message"] for problem in raised.value.problems] == [
        f"Line {bad_line} is not UTF-8 text: save the file as UTF-8."
    ]


@pytest.mark.django_db
def test_a_web_of_science_file_that_ends_inside_a_record_keeps_it_with_a_warning():
    content = (wos_record(1, "Closed") + wos_record(2, "Never closed").replace("ER\n\n", "")).encode()
    summary = references_import(file=io.BytesIO(content), format="wos")
    assert summary.records == 2
    assert [(warning["record"], warning["message"]) for warning in summary.warnings] == [
        (2, "The file ends inside this record: its “ER” line is missing.")
    ]
    assert Reference.objects.get(source_id="WOS:000000000000002").abstract == "An abstract, for record 2."


@pytest.mark.django_db
def test_web_of_science_values_are_read_whatever_the_line_opening_the_record_and_however_often_a_tag_comes():
    """A record whose "PT" line is missing opens with a value that is read; a tag given twice has its values joined;
    a tag line without a value ends the value before it; names and dates are cleaned and read in every record."""
    content = (
        b"TI A record without its PT line\n   whose title goes on\nUT WOS:000000000000001\nPY 20x1\nER\n\n"
        b"PT J\nAU Doe,  J\n\t Roe, R \nAU Poe, P\nTI Two author tags\nAB\n   not a value of any tag\n"
        b"UT WOS:000000000000002\nPY 20x1\nER\n"
    )
    summary = references_import(file=io.BytesIO(content), format="wos")
    first, second = (
        Reference.objects.get(source_id="WOS:000000000000001"),
        Reference.objects.get(source_id="WOS:000000000000002"),
    )
    assert first.title == "A record without its PT line whose title goes on"
    assert (second.title, second.abstract, second.authors) == ("Two author tags", "", ["Doe, J", "Roe, R", "Poe, P"])
    assert [(warning["record"], warning["field"]) for warning in summary.warnings] == [
        (1, "published"),
        (2, "published"),
    ]


# --------------------------------------------------------------------------------------------------- BibTeX


@pytest.mark.django_db
def test_a_scopus_bibtex_export_with_repeated_keys_and_fields():
    references_import(file=fixture("bibtex_scopus_bibx.bib"), format="bibtex")
    references = by_id()
    assert len(references) == 15 and all(reference.source == "bibtex" for reference in references.values())
    akagi = references["doi:10.35848/1347-4065/ac899a"]
    assert akagi.title.startswith("Relationship between temperature rise and thermal conductivity")
    assert akagi.authors == ["Akagi, F.", "Matsushima, N."] and akagi.journal == "Japanese Journal of Applied Physics"
    assert (akagi.published, akagi.published_precision) == (date(2023, 1, 1), "year")
    assert akagi.abstract.endswith("© 2022 The Japan Society of Applied Physics")
    # Scopus gives two articles the key Jeong2022: both are imported, by their DOIs.
    assert sum(1 for reference in references.values() if "@ARTICLE{Jeong2022," in reference.raw) == 2


@pytest.mark.django_db
def test_a_jabref_library_with_biblatex_dates_and_journaltitle():
    references_import(file=fixture("bibtex_jabref_chocolate.bib"), format="bibtex")
    references = by_id()
    corti = references["doi:10.1161/circulationaha.108.827022"]
    assert (corti.title, corti.journal) == ("Cocoa and Cardiovascular Health", "Circulation")
    assert (corti.published, corti.published_precision) == (date(2009, 3, 1), "month")  # date = {2009-03}
    assert corti.authors[-1] == "Lüscher, Thomas F."
    acne = references["doi:10.1001/jama.1969.03160370055011"]
    assert acne.title == "Effect of Chocolate on Acne Vulgaris"  # {{…}}: the protective braces removed
    assert acne.authors[0] == "Fulton, James E., Jr."


@pytest.mark.django_db
def test_a_zotero_better_bibtex_export_has_its_latex_accents_decoded():
    references_import(file=fixture("bibtex_zotero_better_bibtex.bib"), format="bibtex")
    (procopio,) = by_id().values()
    assert procopio.source_id == "id:Procopio2014"  # no DOI or PMID: the citation key
    assert procopio.title == "Experimental Superposition of Orders of Quantum Gates"
    assert "Araújo, Mateus" in procopio.authors and "Brukner, Časlav" in procopio.authors
    assert (procopio.published, procopio.published_precision) == (date(2014, 12, 1), "month")  # month = dec
    assert procopio.abstract.startswith("In a quantum computer, creating superpositions of quantum bits")


BIBTEX_WRITTEN_FOR_THE_TEST = rb"""% Entries written for the test, in the shape of the exports above.
@string{jomch = {Journal of Organometallic Chemistry}}
@comment{jabref-meta: databaseType:bibtex;}

@article{good1,
  title = {Caf{\'e} {DNA} and the {\"O}zge effect in $\alpha$-helices},
  author = {Aks{\i}n, {\"O}zge and {Barnes and Noble}},
  journal = jomch,
  year = 2001, month = mar, day = 5,
  doi = {https://doi.org/10.1000/Test.1},
  abstract = {Text \& more text},
}

@article{broken, title = {This entry lost its closing brace, year = 2002

@article{good2,
  title = "A quoted title",
  eprint = {31415926}, eprinttype = {pubmed},
  date = {2003-07-14},
}

@misc{notitle, year = {2004}}
"""


@pytest.mark.django_db
def test_bibtex_macros_comments_accents_and_one_malformed_entry():
    summary = references_import(file=io.BytesIO(BIBTEX_WRITTEN_FOR_THE_TEST), format="bibtex")
    assert summary.records == 2
    assert [(entry["record"], entry["reason"]) for entry in summary.skipped] == [
        (2, summary.skipped[0]["reason"]),
        (4, "The record has neither a title nor an abstract."),
    ]
    assert summary.skipped[0]["reason"].startswith("The entry at line 14 cannot be read (")
    references = by_id()
    first = references["doi:10.1000/test.1"]
    assert first.title == "Café DNA and the Özge effect in α-helices"
    assert first.authors == ["Aksın, Özge", "Barnes and Noble"]
    assert first.journal == "Journal of Organometallic Chemistry"  # the @string macro
    assert (first.published, first.published_precision) == (date(2001, 3, 5), "day")
    assert first.abstract == "Text & more text"
    second = references["pmid:31415926"]
    assert (second.title, second.pmid, second.published) == ("A quoted title", "31415926", date(2003, 7, 14))


@pytest.mark.django_db
def test_a_file_without_any_bibtex_entry_or_not_utf8_is_refused_whole():
    assert refused(b"% only a comment\n", "bibtex")[0]["message"].startswith("The file holds no BibTeX entries")
    assert "not UTF-8" in refused(b"@article{a, title={caf\xe9}}\n", "bibtex")[0]["message"]
    assert Reference.objects.count() == 0


# ------------------------------------------------------------------------------------------ format detection


@pytest.mark.parametrize(
    ("head", "format"),
    [
        (b'<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet>\n<PubmedArticleSet>', "pubmed_xml"),
        (b"\xef\xbb\xbfPMID- 123\nTI  - x\n", "medline"),
        (b"Record #1 of 2\nProvider: Ovid\n\n1.\nTY  - JOUR\n", "ris"),
        (b"TY  - JOUR\nN1  - PMID- 123\n", "ris"),
        (b"FN Clarivate Analytics Web of Science\nVR 1.0\n", "wos"),
        (b"PT\tAU\tTI\tUT\nJ\ta\tb\tc\n", "wos"),
        (b"% This file was created with JabRef\n\n@Article{x,\n", "bibtex"),
        (b'"Key","Title","Abstract Note"\n', "csv"),
        (b"<html><body>", None),
        (b"just some text\n", None),
    ],
)
def test_the_format_is_told_by_the_earliest_sign_in_the_file(head, format):
    assert detection.detect(head) == format


@pytest.mark.django_db
def test_a_wrong_declared_format_is_refused_naming_the_detected_one():
    problems = refused(fixture("wos_bibx_single_article.txt").read_bytes(), "ris")
    assert problems == [
        {
            "record": None,
            "id": "",
            "field": "format",
            "message": "This file is a Web of Science export, not RIS: import it with the format “wos”, or leave "
            "the format out to have it told from the content.",
        }
    ]
    assert "This file is BibTeX, not MEDLINE text" in refused(BIBTEX_WRITTEN_FOR_THE_TEST, "medline")[0]["message"]
    assert refused(b"just some text\n", None)[0]["message"].startswith("The format cannot be told")
    assert Reference.objects.count() == 0


def test_api_without_a_format_tells_it_and_refuses_a_wrong_one(coordinator):
    client = APIClient()
    client.force_authenticate(coordinator)
    upload = SimpleUploadedFile("savedrecs.txt", fixture("wos_metaknowledge_twopaper.isi").read_bytes())
    told = client.post("/api/v1/literature/import", {"file": upload}, format="multipart")
    assert told.status_code == 200, told.content
    assert (told.json()["format"], told.json()["format_detected"], told.json()["created"]) == ("wos", True, 2)
    upload = SimpleUploadedFile("library.bib", fixture("bibtex_jabref_chocolate.bib").read_bytes())
    wrong = client.post("/api/v1/literature/import", {"file": upload, "format": "csv"}, format="multipart")
    assert wrong.status_code == 400
    assert wrong.json()["problems"][0]["message"].startswith("This file is BibTeX, not CSV")


# ----------------------------------------------------------------- the corpus page and the novelty retrieval


def test_imported_records_are_found_by_the_corpus_page_and_the_novelty_retrieval(client, coordinator):
    references_import(file=fixture("wos_bibx_savedrecs.txt"))
    references_import(file=fixture("bibtex_jabref_chocolate.bib"))
    client.force_login(coordinator)
    page = client.get(reverse("literature-corpus"), {"q": "cocoa chocolate cardiovascular health"}).content.decode()
    assert "Cocoa and Cardiovascular Health" in page and "BibTeX file" in page
    wos_page = client.get(reverse("literature-corpus"), {"source": "wos"}).content.decode()
    assert "Web of Science file" in wos_page and "solvent vapor annealing" in wos_page
    found = retrieval.search("solvent vapor annealing block copolymer thin films defects", limit=5)
    best = Reference.objects.get(pk=found[0].reference_id)
    assert (best.source, best.source_id) == ("wos", "WOS:000401190100002")
    found = retrieval.search("chocolate acne vulgaris", limit=5)
    assert Reference.objects.get(pk=found[0].reference_id).title == "Effect of Chocolate on Acne Vulgaris"


def test_clean_collapses_every_kind_of_whitespace_as_splitting_the_text_does():
    """clean() returns a value unchanged when a few scans say it is clean already: never when it is not."""
    import sys

    from literature.importers.records import clean

    spaces = [chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()]
    for space in spaces:
        for text in (f"a{space}b", f"{space}a", f"a{space}", f"a {space}b", f"a{space}{space}b", space):
            assert clean(text) == " ".join(text.split()), repr(text)
    assert clean("A clean title.") == "A clean title." and clean(None) == ""


def test_a_survey_of_a_records_bytes_lets_no_other_whitespace_or_control_character_through():
    """surveyed() says a record's values need only their spaces looked at, or no control-character check, only when
    that is so: every whitespace character but the space and the line feed, and every control character, is seen."""
    import sys

    from literature.importers.records import clean, clean_spaces, surveyed
    from reviewapp.core.text import control_character_problem

    for code in range(sys.maxunicode + 1):
        character = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        text = f"Ageing{character}clocks  and\n   frailty "
        no_control, spaces_only = surveyed(text.encode())
        if character.isspace() and character not in " \n":
            assert not spaces_only, f"U+{code:04X}"
        if control_character_problem(character):
            assert not no_control, f"U+{code:04X}"
        if spaces_only:
            assert clean_spaces(text) == clean(text) == " ".join(text.split()), f"U+{code:04X}"
    assert surveyed("Ageing — clocks β".encode()) == (True, False)
    assert surveyed("Ageing clocks β, Müller".encode()) == (True, True)


def test_web_of_science_values_with_other_spaces_or_control_characters_are_read_as_before():
    """A record whose bytes hold a tab, a no-break space or a control character is cleaned and checked value by value:
    its whitespace collapsed, a control character in a value it reads refused, one in a field it does not read
    ignored."""
    text = (
        "FN Clarivate Analytics Web of Science\nVR 1.0\n"
        "PT J\nTI A\ttabbed\u00a0title\n   wrapped\nAB Plain  abstract \u2013 with a dash\nUT WOS:1\nER\n\n"
        "PT J\nTI Bell\x07 in the title\nUT WOS:2\nER\n\n"
        "PT J\nTI Bell only in an address\nC1 Univ\x07 Somewhere\nUT WOS:3\nER\n\n"
        "PT J\nAU Smith,  J\n   Jones, K \nTI Spaced  title\nUT WOS:4\nER\nEF\n"
    )
    parsed = list(wos.read(io.BytesIO(text.encode())))
    assert parsed[0].reference.title == "A tabbed title wrapped"
    assert parsed[0].reference.abstract == "Plain abstract \u2013 with a dash"
    assert parsed[1].reference is None and parsed[1].problems[0].field == "title"
    assert "U+0007" in parsed[1].problems[0].message
    assert parsed[2].reference.title == "Bell only in an address" and not parsed[2].problems
    assert parsed[3].reference.title == "Spaced title"
    assert parsed[3].reference.authors == ["Smith, J", "Jones, K"]


def test_the_literature_page_tells_the_format_and_names_it_in_the_outcome(client, coordinator):
    client.force_login(coordinator)
    page = client.get(reverse("literature-home")).content.decode()
    assert '<option value="" selected>Tell from the file</option>' in page
    upload = SimpleUploadedFile("TwoPaper.isi", fixture("wos_metaknowledge_twopaper.isi").read_bytes())
    posted = client.post(reverse("literature-home"), {"format": "", "file": upload}, HTTP_HX_REQUEST="true")
    assert "Imported 2 references</strong> from Web of Science (plain text or tab-delimited)" in posted.content.decode()
