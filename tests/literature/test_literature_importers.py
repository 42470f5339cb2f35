"""Reference importers on real-format files (PubMed XML, MEDLINE, RIS, CSV): fields, dates and their precision,
labelled abstracts, non-ASCII text, every usable record imported and the unusable ones skipped with their reasons,
fields that cannot be read left out with a warning, a file that cannot be read refused whole, re-import updating
rather than duplicating; the import API, the coordinators' page and the management command."""

import io
from datetime import date
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from literature.models import Reference, ReferenceImport
from literature.services import WRITE_BATCH, ImportInvalid, references_import
from tests.api_schema_support import api_schema, assert_conforms

FIXTURES = Path(__file__).parent.parent / "fixtures" / "literature"
CSV_MAPPING = {
    "title": "Article Title",
    "authors": "Authors",
    "journal": "Source Title",
    "published": "Publication Year",
    "doi": "DOI",
    "pmid": "PubMed ID",
    "abstract": "Abstract",
}


def fixture(name: str) -> Path:
    return FIXTURES / name


def problems_of_import(content: bytes, format: str, **options) -> list[tuple]:
    """The problems of a file refused whole."""
    with pytest.raises(ImportInvalid) as raised:
        references_import(file=io.BytesIO(content), format=format, **options)
    return [(problem["record"], problem["field"]) for problem in raised.value.records]


def left_out(summary) -> tuple[list, list]:
    """(record numbers skipped, (record, field) of each warning) of an import."""
    return [entry["record"] for entry in summary.skipped], [(w["record"], w["field"]) for w in summary.warnings]


def pubmed_article(pmid: str, title: str, year: str = "2020", month: str = "") -> str:
    month_tag = f"<Month>{month}</Month>" if month else ""
    return (
        f"<PubmedArticle><MedlineCitation><PMID>{pmid}</PMID><Article><Journal><JournalIssue><PubDate>"
        f"<Year>{year}</Year>{month_tag}</PubDate></JournalIssue><Title>Test journal</Title></Journal>"
        f"<ArticleTitle>{title}</ArticleTitle></Article></MedlineCitation></PubmedArticle>"
    )


def pubmed_set(*articles: str) -> bytes:
    return ("<?xml version='1.0'?>\n<PubmedArticleSet>" + "".join(articles) + "</PubmedArticleSet>").encode()


# ------------------------------------------------------------------------------------------------ PubMed XML


@pytest.mark.django_db
def test_pubmed_xml_import_keeps_labelled_abstract_sections_and_non_ascii_authors():
    summary = references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")

    assert (summary.records, summary.created, summary.updated, summary.unchanged) == (5, 5, 0, 0)
    reference = Reference.objects.get(source="pubmed", source_id="38012345")
    assert reference.pmid == "38012345"
    assert reference.doi == "10.1111/acel.14102"
    assert reference.title == "Clonal haematopoiesis driven by TET2 loss accelerates frailty in ageing mice."
    assert reference.abstract.startswith(
        "BACKGROUND: Clonal haematopoiesis of indeterminate potential is common in older adults. "
        "METHODS: We transplanted Tet2-deficient marrow"
    )
    assert "RESULTS: Recipients lost grip strength 1.8-fold faster (P<0.01)" in reference.abstract
    assert reference.abstract.endswith("CONCLUSIONS: Mutant clones accelerate frailty through inflammatory signalling.")
    assert "©" not in reference.abstract  # the copyright line is not part of the abstract
    assert reference.journal == "Aging cell"
    assert reference.authors == ["Müller, Jörg", "Łukasiewicz, Zoë", "Kim, SH", "Ageing Biology Consortium"]
    assert (reference.published, reference.published_precision) == (date(2024, 3, 15), "day")
    assert reference.raw.startswith("<PubmedArticle>") and '<PMID Version="1">38012345</PMID>' in reference.raw
    assert len(reference.content_sha256) == 64


@pytest.mark.django_db
def test_pubmed_xml_dates_keep_their_precision():
    references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")
    dates = dict(Reference.objects.values_list("source_id", "published"))
    precisions = dict(Reference.objects.values_list("source_id", "published_precision"))

    assert (dates["39100002"], precisions["39100002"]) == (date(2024, 11, 1), "month")  # MedlineDate "2024 Nov-Dec"
    assert (dates["7654321"], precisions["7654321"]) == (date(1995, 1, 1), "year")  # year only
    assert (dates["40300004"], precisions["40300004"]) == (date(2023, 1, 1), "year")  # year and season
    assert (dates["40200003"], precisions["40200003"]) == (None, "")  # no date at all


@pytest.mark.django_db
def test_pubmed_xml_non_ascii_titles_are_kept_exactly():
    references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")
    titles = dict(Reference.objects.values_list("source_id", "title"))

    assert titles["39100002"] == "[Rôle de la β-caténine dans la sarcopénie : une revue]."
    assert titles["40300004"] == "小鼠衰老的表观遗传时钟"
    assert Reference.objects.get(source_id="39100002").journal == "Revue de gériatrie"


@pytest.mark.django_db
def test_unusable_pubmed_records_are_skipped_with_their_reasons_and_a_bad_date_is_left_out():
    summary = references_import(file=fixture("pubmed_malformed.xml"), format="pubmed_xml")

    assert (summary.records, summary.skipped_count, summary.warning_count) == (3, 2, 1)
    assert summary.skipped == [
        {"record": 2, "id": "", "reason": "The record has no PMID."},
        {"record": 4, "id": "31000004", "reason": "The record has neither a title nor an abstract."},
    ]
    assert summary.warnings[0]["record"] == 3 and summary.warnings[0]["id"] == "31000003"
    assert "“Foo” is not a month" in summary.warnings[0]["message"] and "left out" in summary.warnings[0]["message"]
    assert set(Reference.objects.values_list("source_id", flat=True)) == {"31000001", "31000003", "31000005"}
    assert Reference.objects.get(source_id="31000003").published is None
    batch = ReferenceImport.objects.get()
    assert (batch.records, batch.skipped, batch.skipped_records, len(batch.warnings)) == (3, 2, summary.skipped, 1)


@pytest.mark.django_db
def test_a_file_unreadable_after_a_written_batch_imports_nothing():
    articles = [pubmed_article(str(100000 + n), f"Valid record {n}") for n in range(WRITE_BATCH + 5)]
    content = pubmed_set(*articles)
    truncated = content[: content.rindex(b"</PubmedArticle>")]

    assert problems_of_import(truncated, "pubmed_xml") == [(None, "file")]
    assert Reference.objects.count() == 0
    assert ReferenceImport.objects.count() == 0


@pytest.mark.django_db
def test_truncated_xml_is_refused_whole_and_imports_nothing():
    content = fixture("pubmed_malformed.xml").read_bytes()
    truncated = content[: content.index(b"A record whose month")]

    with pytest.raises(ImportInvalid) as raised:
        references_import(file=io.BytesIO(truncated), format="pubmed_xml")

    assert [(p["record"], p["field"]) for p in raised.value.records] == [(None, "file")]
    assert "not well-formed after record 2" in raised.value.records[0]["message"]
    assert Reference.objects.count() == 0


@pytest.mark.django_db
def test_xml_that_is_not_a_pubmed_export_is_refused():
    with pytest.raises(ImportInvalid) as raised:
        references_import(file=io.BytesIO(b"<eSummaryResult><DocSum/></eSummaryResult>"), format="pubmed_xml")
    assert "not <PubmedArticleSet>" in raised.value.records[0]["message"]
    assert problems_of_import(b"", "pubmed_xml") == [(None, "file")]


@pytest.mark.django_db
def test_a_malformed_doi_from_pubmed_is_left_out_rather_than_refusing_the_export():
    article = pubmed_article("888", "Record with a damaged DOI").replace(
        "</Article>", '<ELocationID EIdType="doi">10.1016/ S0140-6736</ELocationID></Article>'
    )
    summary = references_import(file=io.BytesIO(pubmed_set(article)), format="pubmed_xml")
    reference = Reference.objects.get()
    assert (summary.created, reference.doi) == (1, "")
    assert "10.1016/ S0140-6736" in reference.raw


@pytest.mark.django_db
def test_reimport_updates_changed_references_and_never_duplicates():
    first = references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")
    original = Reference.objects.get(source_id="7654321")

    again = references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")
    assert (again.created, again.updated, again.unchanged) == (0, 0, 5)

    changed = (
        fixture("pubmed_efetch.xml")
        .read_bytes()
        .replace(b"Caloric restriction and lifespan in rodents.", b"Caloric restriction extends lifespan in rodents.")
    )
    third = references_import(file=io.BytesIO(changed), format="pubmed_xml")

    assert (first.created, third.created, third.updated, third.unchanged) == (5, 0, 1, 4)
    assert Reference.objects.count() == 5
    updated = Reference.objects.get(source_id="7654321")
    assert updated.pk == original.pk and updated.created_at == original.created_at
    assert updated.title == "Caloric restriction extends lifespan in rodents."
    assert updated.content_sha256 != original.content_sha256


@pytest.mark.django_db
def test_identical_repeat_in_a_file_is_skipped_and_a_conflicting_repeat_is_skipped_with_its_reason():
    same = pubmed_article("555", "Same record")
    summary = references_import(file=io.BytesIO(pubmed_set(same, same)), format="pubmed_xml")
    assert (summary.records, summary.repeated) == (1, 1)

    conflicting = pubmed_set(pubmed_article("777", "First version"), pubmed_article("777", "Second version"))
    summary = references_import(file=io.BytesIO(conflicting), format="pubmed_xml")
    assert summary.skipped == [
        {
            "record": 2,
            "id": "777",
            "reason": "Record 1 has the same id with different content; only the first was imported.",
        }
    ]
    assert Reference.objects.get(source_id="777").title == "First version"


# -------------------------------------------------------------------------------------------------- MEDLINE


@pytest.mark.django_db
def test_medline_import_joins_continuation_lines_and_reads_dp_dates():
    summary = references_import(file=fixture("pubmed.nbib"), format="medline")

    assert summary.records == 4
    first = Reference.objects.get(source="pubmed", source_id="38012345")
    assert first.title == "Clonal haematopoiesis driven by TET2 loss accelerates frailty in ageing mice."
    assert first.abstract.startswith("BACKGROUND: Clonal haematopoiesis of indeterminate potential is common in older")
    assert " METHODS: We transplanted Tet2-deficient marrow into 40 aged recipients" in first.abstract
    assert first.authors == ["Müller, Jörg", "Łukasiewicz, Zoë"]
    assert first.doi == "10.1111/acel.14102"
    assert (first.published, first.published_precision) == (date(2024, 3, 15), "day")
    assert first.journal == "Aging cell"
    assert first.raw.startswith("PMID- 38012345\nOWN - NLM")
    ranged = Reference.objects.get(source_id="39100002")
    assert (ranged.published, ranged.published_precision) == (date(2024, 11, 1), "month")
    assert ranged.authors == ["Lefèvre, Anaïs"]
    assert Reference.objects.get(source_id="7654321").published_precision == "year"
    assert Reference.objects.get(source_id="40200003").published is None


@pytest.mark.django_db
def test_medline_and_pubmed_xml_of_one_article_are_one_reference():
    references_import(file=fixture("pubmed_efetch.xml"), format="pubmed_xml")
    summary = references_import(file=fixture("pubmed.nbib"), format="medline")

    assert summary.created == 0
    assert Reference.objects.filter(source_id="38012345").count() == 1
    assert Reference.objects.count() == 5


@pytest.mark.django_db
def test_medline_skips_a_record_without_pmid_and_names_the_lines_it_left_out():
    content = (
        b"PMID- 1\nTI  - Fine record\nDP  - 2020\n\n"
        b"PMID- 2\nTI  - Broken line below\nthis line has no tag\nDP  - 2020 Feb 30\n\n"
        b"TI  - No PMID at all\n"
    )

    summary = references_import(file=io.BytesIO(content), format="medline")

    assert left_out(summary) == ([3], [(2, "line"), (2, "published")])
    assert summary.skipped[0]["reason"] == "The record has no PMID."
    assert summary.warnings[0]["message"] == (
        "Line 7 is neither a “TAG - value” line nor a continuation; it was ignored."
    )
    assert set(Reference.objects.values_list("source_id", flat=True)) == {"1", "2"}


# ------------------------------------------------------------------------------------------------------ RIS


@pytest.mark.django_db
def test_ris_import_reads_ids_dates_and_wrapped_abstracts():
    summary = references_import(file=fixture("references.ris"), format="ris")

    assert summary.records == 4
    senolytics = Reference.objects.get(source="ris", source_id="pmid:29988130")
    assert senolytics.doi == "10.1038/s41591-018-0092-9"
    assert senolytics.journal == "Nature Medicine"
    assert senolytics.authors == ["Xu, Ming", "Pirtskhalava, Tamar"]
    assert (senolytics.published, senolytics.published_precision) == (date(2018, 8, 9), "day")
    assert senolytics.abstract.endswith(
        "Transplanting senescent cells into young mice caused persistent physical dysfunction."
    )
    french = Reference.objects.get(source_id="id:dupre2021")
    assert french.title == "Métabolisme mitochondrial et vieillissement musculaire"
    assert (french.published, french.published_precision) == (date(2021, 1, 1), "year")
    book = Reference.objects.get(title="Biology of Aging")
    assert book.source_id.startswith("title:")
    assert (book.published, book.published_precision) == (date(2019, 5, 1), "month")
    undated = Reference.objects.get(source_id="id:oster-nd")
    assert (undated.published, undated.authors) == (None, ["Østergaard, Søren"])


@pytest.mark.django_db
def test_ris_reimport_is_stable_for_records_without_ids():
    references_import(file=fixture("references.ris"), format="ris")
    summary = references_import(file=fixture("references.ris"), format="ris")
    assert (summary.created, summary.unchanged) == (0, 4)


@pytest.mark.django_db
def test_ris_skips_unusable_records_ignores_stray_lines_and_reports_what_it_left_out():
    content = (
        b"stray text\n"
        b"TY  - JOUR\nTI  - Fine\nPY  - 2020\nER  - \n"
        b"TY  - JOUR\nPY  - 20x0\nER  - \n"
        b"AU  - Orphan, Tag\n"
        b"TY  - JOUR\nTI  - Never closed\nDO  - not-a-doi\n"
    )

    summary = references_import(file=io.BytesIO(content), format="ris")

    assert left_out(summary) == ([2, None], [(3, "ER"), (3, "doi")])
    assert summary.skipped[0]["reason"] == "The record has neither a title nor an abstract."
    assert summary.skipped[1]["reason"] == "Line 9 (tag AU) is outside any record: no “TY  -” line opens it."
    assert sorted(Reference.objects.values_list("title", flat=True)) == ["Fine", "Never closed"]
    assert Reference.objects.get(title="Never closed").doi == ""


# ------------------------------------------------------------------------------------------------------ CSV


@pytest.mark.django_db
def test_csv_import_with_a_column_mapping():
    summary = references_import(file=fixture("references.csv"), format="csv", column_mapping=CSV_MAPPING)

    assert summary.records == 3
    metformin = Reference.objects.get(source="csv", source_id="pmid:27304507")
    assert metformin.authors == ["Barzilai, Nir", "Crandall, Jill"]
    assert metformin.abstract == "Metformin users had lower mortality. BACKGROUND-like text, with a comma."
    assert (metformin.published, metformin.published_precision) == (date(2016, 1, 1), "year")
    assert metformin.raw.startswith('{"Article Title": "Metformin and healthspan')
    german = Reference.objects.get(title="Ästhetik des Alterns: Hautalterung und Sirtuine")
    assert german.authors == ["Schäfer, Jürgen"]
    nad = Reference.objects.get(source_id="doi:10.1126/science.aaf2693")
    assert nad.title == "NAD+ repletion rescues mitochondrial function in aged muscle"
    assert (nad.published, nad.published_precision) == (date(2016, 4, 1), "month")


@pytest.mark.django_db
def test_csv_columns_named_like_the_fields_need_no_mapping():
    content = b"Title,Year,Extra\nA plain title,2012,ignored\n"
    references_import(file=io.BytesIO(content), format="csv")
    reference = Reference.objects.get()
    assert (reference.title, reference.published, reference.published_precision) == (
        "A plain title",
        date(2012, 1, 1),
        "year",
    )


@pytest.mark.django_db
def test_csv_separated_by_semicolons_is_read():
    content = b'Title;Authors;Published\n"Sirtuins; a review";"Guarente, Leonard; Imai, Shin";2013-11\n'
    references_import(file=io.BytesIO(content), format="csv")
    reference = Reference.objects.get()
    assert reference.title == "Sirtuins; a review"
    assert reference.authors == ["Guarente, Leonard", "Imai, Shin"]
    assert reference.published == date(2013, 11, 1)


@pytest.mark.django_db
def test_records_told_apart_only_by_title_are_explained():
    content = b"title,year,abstract\nEditorial,2020,First\nEditorial,2020,Second\n"
    summary = references_import(file=io.BytesIO(content), format="csv")
    assert summary.skipped[0]["record"] == 3
    assert "same title and year" in summary.skipped[0]["reason"]
    assert Reference.objects.get().abstract == "First"


@pytest.mark.django_db
def test_csv_rows_are_numbered_as_in_a_spreadsheet():
    content = (
        "title,published,doi\nFine,2020-01-02,\n,2020,\nBad date,2020/13,\nToo many,2020,,extra\nBad DOI,,doi:11.x\n"
    )

    summary = references_import(file=io.BytesIO(content.encode()), format="csv")

    assert left_out(summary) == ([3, 5], [(4, "published"), (6, "doi")])
    assert summary.skipped[1]["reason"] == "The row has 4 values but the header names 3 columns."
    assert sorted(Reference.objects.values_list("title", flat=True)) == ["Bad DOI", "Bad date", "Fine"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content, mapping, message",
    [
        (b"name,year\nx,2020\n", None, "no title or abstract column"),
        (b"title\nx\n", {"title": "Article Title"}, "does not have: title"),
        (b"title\nx\n", {"titel": "title"}, "unknown fields: titel"),
        (b"title\nx\n", "{not json", "not valid JSON"),
        ("title\nÄrger\n".encode("latin-1"), None, "not UTF-8"),
    ],
)
def test_csv_file_level_problems_are_refused(content, mapping, message):
    with pytest.raises(ImportInvalid) as raised:
        references_import(file=io.BytesIO(content), format="csv", column_mapping=mapping)
    assert message in raised.value.records[0]["message"]
    assert raised.value.records[0]["record"] is None


@pytest.mark.django_db
def test_unknown_format_and_a_mapping_for_another_format_are_refused():
    assert problems_of_import(b"x", "endnote") == [(None, "format")]
    assert problems_of_import(b"x", "ris", column_mapping={"title": "T"}) == [(None, "mapping")]


# ------------------------------------------------------------------------------------------ API and the page


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def upload(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, fixture(name).read_bytes())


IMPORT = "/api/v1/literature/import"


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return api_schema()


def test_api_import_by_a_coordinator_answers_the_counts(coordinator, schema):
    response = api_for(coordinator).post(
        "/api/v1/literature/import", {"file": upload("pubmed_efetch.xml"), "format": "pubmed_xml"}, format="multipart"
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert {key: body[key] for key in ("format", "records", "created", "updated", "unchanged")} == {
        "format": "pubmed_xml",
        "records": 5,
        "created": 5,
        "updated": 0,
        "unchanged": 0,
    }
    batch = ReferenceImport.objects.get(pk=body["import_id"])
    assert (batch.name, batch.created_by, batch.file_format) == ("pubmed_efetch.xml", coordinator, "pubmed_xml")
    assert (body["skipped"], body["warnings"]) == ([], [])
    assert_conforms(schema, IMPORT, body, method="post")


def test_api_csv_import_takes_a_json_mapping(coordinator):
    import json

    response = api_for(coordinator).post(
        "/api/v1/literature/import",
        {"file": upload("references.csv"), "format": "csv", "mapping": json.dumps(CSV_MAPPING)},
        format="multipart",
    )
    assert response.status_code == 200, response.content
    assert response.json()["created"] == 3


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["reviewer", "analyst"])
def test_api_import_is_refused_to_reviewers_and_analysts(role, request):
    user = request.getfixturevalue(role)
    response = api_for(user).post(
        "/api/v1/literature/import", {"file": upload("pubmed_efetch.xml"), "format": "pubmed_xml"}, format="multipart"
    )
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert Reference.objects.count() == 0


def test_api_answers_the_skipped_records_with_their_reasons(coordinator, schema):
    response = api_for(coordinator).post(
        "/api/v1/literature/import",
        {"file": upload("pubmed_malformed.xml"), "format": "pubmed_xml"},
        format="multipart",
    )

    assert response.status_code == 200
    body = response.json()
    assert (body["records"], body["created"], body["skipped_count"], body["warning_count"]) == (3, 3, 2, 1)
    assert body["skipped"][0] == {"record": 2, "id": "", "reason": "The record has no PMID."}
    assert body["warnings"][0]["field"] == "published"
    assert_conforms(schema, IMPORT, body, method="post")


def test_api_unreadable_file_answers_400_and_imports_nothing(coordinator):
    broken = SimpleUploadedFile("broken.xml", b"<PubmedArticleSet><PubmedArticle>")
    response = api_for(coordinator).post(
        "/api/v1/literature/import", {"file": broken, "format": "pubmed_xml"}, format="multipart"
    )

    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_import"
    assert body["detail"] == "The file has 1 problem(s); nothing was imported."
    assert body["problems"] == [{"field": "file", "message": body["problems"][0]["message"]}]
    assert Reference.objects.count() == 0


def test_api_without_file_or_with_an_unknown_format_answers_invalid_import(coordinator):
    client = api_for(coordinator)
    missing = client.post("/api/v1/literature/import", {"format": "ris"}, format="multipart")
    unknown = client.post(
        "/api/v1/literature/import", {"file": upload("references.ris"), "format": "endnote"}, format="multipart"
    )

    assert missing.status_code == unknown.status_code == 400
    assert missing.json()["problems"][0]["field"] == "file"
    assert unknown.json()["error"] == "invalid_import"
    assert unknown.json()["problems"][0]["field"] == "format"


def test_literature_page_imports_and_shows_the_corpus(client, coordinator):
    client.force_login(coordinator)
    url = reverse("literature-home")

    page = client.get(url)
    assert page.status_code == 200
    assert b"The corpus is empty." in page.content

    posted = client.post(url, {"format": "ris", "file": upload("references.ris")}, HTTP_HX_REQUEST="true")
    assert posted.status_code == 200
    text = posted.content.decode()
    assert "Imported 4 references" in text
    assert "<td>RIS file</td><td>4</td>" in text
    assert "references.ris" in text
    assert "<h1>" not in text  # the htmx answer is the outcome partial only


def test_literature_page_lists_skipped_records_and_warnings(client, coordinator):
    client.force_login(coordinator)
    posted = client.post(reverse("literature-home"), {"format": "pubmed_xml", "file": upload("pubmed_malformed.xml")})
    text = posted.content.decode()
    assert "Imported 3 references" in text and "2 unusable and skipped" in text
    assert "The record has no PMID." in text
    assert "“Foo” is not a month" in text
    broken = SimpleUploadedFile("broken.xml", b"<PubmedArticleSet><PubmedArticle>")
    refused = client.post(reverse("literature-home"), {"format": "pubmed_xml", "file": broken}).content.decode()
    assert "Nothing was imported:" in refused and "the file cannot be read" in refused


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["reviewer", "analyst"])
def test_literature_page_is_for_coordinators_only(client, role, request):
    client.force_login(request.getfixturevalue(role))
    assert client.get(reverse("literature-home")).status_code == 403


# -------------------------------------------------------------------------------------------------- command


@pytest.mark.django_db
def test_import_command_shows_progress_and_the_counts():
    out, err = io.StringIO(), io.StringIO()
    call_command("import_references", str(fixture("pubmed_efetch.xml")), stdout=out, stderr=err)

    assert "Imported 5 references from pubmed_efetch.xml" in out.getvalue()
    assert "100%" in err.getvalue() and "records/s" in err.getvalue()
    assert Reference.objects.count() == 5


@pytest.mark.django_db
def test_import_command_lists_what_it_skipped_and_left_out():
    out, err = io.StringIO(), io.StringIO()
    call_command("import_references", str(fixture("pubmed_malformed.xml")), "--no-progress", stdout=out, stderr=err)
    assert "2 unusable and skipped, 1 warning(s)" in out.getvalue()
    assert "skipped record 2: The record has no PMID." in err.getvalue()
    assert "warning record 3 (31000003) published:" in err.getvalue()
    assert Reference.objects.count() == 3


@pytest.mark.django_db
def test_import_command_refuses_an_unreadable_file_and_imports_nothing(tmp_path):
    broken = tmp_path / "broken.xml"
    broken.write_bytes(b"<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID>")
    err = io.StringIO()
    with pytest.raises(CommandError, match="Nothing was imported: 1 problem"):
        call_command("import_references", str(broken), "--no-progress", stdout=io.StringIO(), stderr=err)
    assert "file file:" in err.getvalue()
    assert Reference.objects.count() == 0


# ------------------------------------------------------------------------------- exports as tools write them
# Where the shapes come from: tests/fixtures/literature/README.md.


@pytest.mark.django_db
def test_an_ovid_export_with_numbered_records_and_headers_between_them():
    summary = references_import(file=fixture("ovid_numbered.ris"), format="ris")

    assert (summary.records, summary.skipped_count, summary.warning_count) == (3, 1, 0)
    assert summary.skipped == [
        {"record": 4, "id": "pmid:35550000", "reason": "The record has neither a title nor an abstract."}
    ]
    senolytics = Reference.objects.get(source_id="pmid:29988130")
    assert senolytics.title == "Senolytics improve physical function and increase lifespan in old age"
    assert senolytics.doi == "10.1038/s41591-018-0092-9" and senolytics.journal == "Nature Medicine"
    untitled = Reference.objects.get(source_id="pmid:31112233")
    assert untitled.title == "" and untitled.abstract.startswith("BACKGROUND: Conference abstract without a title")
    assert (untitled.published, untitled.published_precision) == (date(2019, 6, 1), "month")
    embase = Reference.objects.get(title__startswith="Rapamycin dosing")
    assert embase.pmid == "" and embase.source_id.startswith("title:")  # Embase numbers its own way
    again = references_import(file=fixture("ovid_numbered.ris"), format="ris")
    assert (again.created, again.unchanged) == (0, 3)


@pytest.mark.django_db
def test_an_endnote_export_with_untagged_continuation_lines_and_a_record_without_title():
    summary = references_import(file=fixture("endnote_export.ris"), format="ris")

    assert (summary.records, [entry["record"] for entry in summary.skipped]) == (2, [3])
    fasting = Reference.objects.get(source_id="doi:10.1111/acel.13999")
    assert fasting.title == "Intermittent fasting delays frailty in ageing mice"
    assert fasting.authors == ["de Vries, Jan", "Jansen, Eva"]
    assert fasting.journal == "Aging Cell" and fasting.published == date(2023, 1, 1)
    poster = Reference.objects.get(source_id="id:102")
    assert poster.title == "" and poster.abstract.startswith("Poster abstract recorded without a title")


@pytest.mark.django_db
def test_a_zotero_csv_export_with_a_title_less_item_and_a_note():
    mapping = {
        "id": "Key",
        "title": "Title",
        "abstract": "Abstract Note",
        "authors": "Author",
        "journal": "Publication Title",
        "doi": "DOI",
        "year": "Publication Year",
    }
    summary = references_import(file=fixture("zotero_export.csv"), format="csv", column_mapping=mapping)

    assert summary.records == 2
    assert summary.skipped == [
        {"record": 4, "id": "id:N4C8TT2K", "reason": "The record has neither a title nor an abstract."}
    ]
    senolytics = Reference.objects.get(source_id="doi:10.1038/s41591-018-0092-9")
    assert senolytics.authors == ["Xu, Ming", "Pirtskhalava, Tamar"] and senolytics.published == date(2018, 1, 1)
    preprint = Reference.objects.get(source_id="id:R7XW2B9Q")
    assert preprint.title == "" and "clonal haematopoiesis predicted frailty" in preprint.abstract


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "format"), [("pubmed_titleless.xml", "pubmed_xml"), ("pubmed_titleless.nbib", "medline")]
)
def test_pubmed_records_without_a_title_are_kept_when_they_have_an_abstract(name, format):
    summary = references_import(file=fixture(name), format=format)

    untitled = Reference.objects.get(source_id="36100001")
    assert untitled.title == ""
    assert (
        untitled.abstract
        == "AIM: To relate gait speed to clonal haematopoiesis. RESULTS: Carriers walked 0.1 m/s slower."
    )
    assert (untitled.published, untitled.published_precision) == (date(2022, 10, 1), "month")
    assert Reference.objects.filter(source_id="36100003").exists()
    skipped = [entry["id"] for entry in summary.skipped]
    assert skipped == (["36100002"] if format == "pubmed_xml" else [])


@pytest.mark.django_db
def test_a_title_less_record_is_found_by_its_abstract_and_shown_as_untitled(client, coordinator):
    references_import(file=fixture("endnote_export.ris"), format="ris")
    client.force_login(coordinator)
    page = client.get(reverse("literature-corpus"), {"q": "NAD+ precursors muscle grip strength"}).content.decode()
    assert "(no title)" in page and "Poster abstract recorded without a title" in page


# ------------------------------------------------------------------- files exported by the tools themselves
# Byte for byte as PubMed, EndNote, Zotero, Ovid, Embase and Scopus wrote them (some cut after whole records);
# where each comes from: tests/fixtures/literature/README.md.


def imported(name: str, format: str) -> dict[str, Reference]:
    summary = references_import(file=fixture(name), format=format)
    assert (summary.skipped, summary.warnings) == ([], []), (summary.skipped, summary.warnings)
    return {reference.source_id: reference for reference in Reference.objects.order_by("pk")}


@pytest.mark.django_db
def test_pubmed_efetch_xml_as_ncbi_sent_it():
    first = imported("biopython_efetch_pubmed1.xml", "pubmed_xml")
    assert list(first) == ["12091962", "9997"]
    aids = first["12091962"]
    assert aids.title == "The treatment of AIDS behind the walls of correctional facilities."
    assert (aids.abstract, aids.doi, aids.authors) == ("", "", ["Olivero, J Michael"])
    assert (aids.published, aids.published_precision) == (date(1990, 1, 1), "year")  # "1990 Spring"
    assert aids.journal == "Social justice (San Francisco, Calif.)"
    heme = first["9997"]
    assert heme.title == "Magnetic studies of Chromatium flavocytochrome C552. A mechanism for heme-flavin interaction."
    assert heme.doi == "10.1016/0005-2795(76)90109-4" and heme.pmid == "9997"
    assert (heme.published, heme.published_precision) == (date(1976, 9, 28), "day")
    assert heme.abstract.startswith("Electron paramagnetic resonance and magnetic susceptibility studies of")
    assert heme.abstract.endswith("the existence of a mechanism for heme-flavin interaction.")

    second = imported("biopython_efetch_pubmed2.xml", "pubmed_xml")
    sperm = second["11748933"]
    assert sperm.title.startswith("Is cryopreservation a homogeneous process? Ultrastructure and motility")
    assert (sperm.published, sperm.published_precision) == (date(2001, 6, 1), "month")
    assert sperm.doi == "10.1006/cryo.2001.2328" and len(sperm.authors) == 8 and sperm.authors[0] == "Taddei, A R"
    assert second["11700088"].title == "Proton MRI of (13)C distribution by J and chemical shift editing."


@pytest.mark.django_db
def test_a_medline_file_as_pubmed_saved_it():
    references = imported("biopython_medline_pubmed_result2.txt", "medline")
    assert list(references) == ["16403221", "16377612", "14871861", "14630660"]
    scop = references["16403221"]
    assert scop.title == "A high level interface to SCOP and ASTRAL implemented in python."
    assert scop.abstract.startswith(
        "BACKGROUND: Benchmarking algorithms in structural bioinformatics often involves the"
    )
    assert "  " not in scop.abstract and scop.abstract.endswith("easier and more principled.")
    assert (scop.published, scop.published_precision, scop.doi) == (date(2006, 1, 1), "year", "10.1186/1471-2105-7-10")
    assert scop.authors == ["Casbon, James A", "Crooks, Gavin E", "Saqi, Mansoor A S"]
    diagram = references["16377612"]
    assert diagram.title == "GenomeDiagram: a python package for the visualization of large-scale genomic data."
    assert (diagram.published, diagram.published_precision) == (date(2006, 3, 1), "day")
    pdb = references["14630660"]
    assert (pdb.doi, pdb.published, pdb.journal) == ("", date(2003, 11, 22), "Bioinformatics (Oxford, England)")


@pytest.mark.django_db
def test_an_embase_ris_export_with_a_byte_order_mark():
    assert fixture("asreview_embase.ris").read_bytes().startswith(b"\xef\xbb\xbfTY  - JOUR")
    references = imported("asreview_embase.ris", "ris")
    assert list(references) == [
        "doi:10.4103/2303-9027.138783",
        "doi:10.1002/cncr.20369",
        "doi:10.1016/j.ijscr.2018.11.060",
    ]
    cysts = references["doi:10.4103/2303-9027.138783"]
    assert cysts.title == "Duplication cysts: Diagnosis, management, and the role of endoscopic ultrasound"
    assert cysts.abstract.startswith("Gastrointestinal tract duplication cysts are rare congenital")  # from N2
    assert (cysts.journal, cysts.published, cysts.published_precision) == (
        "Endoscopic Ultrasound",
        date(2014, 1, 1),
        "year",
    )
    assert cysts.authors == ["Liu R.", "Adler D.G."] and cysts.pmid == ""  # Embase numbers its own way
    assert references["doi:10.1002/cncr.20369"].abstract.endswith("© 2004 American Cancer Society.")


@pytest.mark.django_db
def test_an_ovid_psycinfo_export_with_numbers_journal_abbreviations_and_links_between_records():
    references = imported("asreview_ovid_psycinfo.ris", "ris")
    assert list(references) == ["doi:10.1002/cpp.2398", "doi:10.1177/1359105317742958"]  # DO as http://dx.doi.org/…
    first = references["doi:10.1002/cpp.2398"]
    assert first.title == (
        "The influence of self-criticism on depression symptoms among ambulatory patients with inflammatory bowel "
        "disease."
    )
    assert first.journal == "Clinical Psychology & Psychotherapy" and first.authors[0] == "Trindade, Ines A"
    assert first.abstract.endswith("(PsycINFO Database Record (c) 2019 APA, all rights reserved)")
    assert "Link to the Ovid Full Text" not in first.abstract + first.raw


@pytest.mark.django_db
def test_a_scopus_ris_export_with_its_reference_list_on_untagged_lines():
    (stress,) = imported("asreview_scopus.ris", "ris").values()
    assert stress.source_id == "doi:10.1016/j.psyneuen.2019.104501"
    assert stress.title == (
        "Stress and the brain-gut axis in functional and chronic-inflammatory gastrointestinal diseases: A "
        "transdisciplinary challenge"
    )
    assert stress.abstract.startswith("The broad role of stress in the brain-gut axis is widely acknowledged")
    assert stress.abstract.endswith("© 2019 Elsevier Ltd")  # the references (N1) stay out of the abstract
    assert (stress.journal, stress.published, stress.published_precision) == (
        "Psychoneuroendocrinology",
        date(2020, 1, 1),
        "year",
    )
    assert stress.authors == ["Labanski, A.", "Langhorst, J.", "Engler, H.", "Elsenbruch, S."]


@pytest.mark.django_db
def test_a_zotero_ris_export_with_windows_line_ends():
    assert b"\r\n" in fixture("asreview_zotero_crlf.ris").read_bytes()
    references = imported("asreview_zotero_crlf.ris", "ris")
    assert len(references) == 3
    asreview = references["doi:10.1038/s42256-020-00287-7"]
    assert (
        asreview.title == "An open source machine learning framework for efficient and transparent systematic reviews"
    )
    assert (asreview.published, asreview.published_precision) == (date(2021, 2, 1), "day")
    assert asreview.journal == "Nature Machine Intelligence" and len(asreview.authors) == 17
    assert not any("\r" in value for value in (asreview.title, asreview.abstract, *asreview.authors))


@pytest.mark.django_db
def test_pubmed_records_exported_by_endnote_and_by_zotero():
    """EndNote writes the month and day in DA and the year in PY ("DA  - Mar 1", "PY  - 2018"); Zotero writes
    "2019/10//undefined". Both give the date to its month or day."""
    endnote = imported("asreview_pubmed_endnote.txt", "ris")
    assert list(endnote) == [f"pmid:{pmid}" for pmid in (21553931, 29459515, 27626602, 27452660, 24407360, 28482341)]
    assert [(reference.published, reference.published_precision) for reference in endnote.values()] == [
        (date(2011, 6, 1), "month"),
        (date(2018, 3, 1), "day"),
        (date(2017, 1, 1), "month"),
        (date(2016, 11, 4), "day"),
        (date(2014, 3, 1), "month"),
        (date(2017, 1, 1), "year"),
    ]
    boswellia = endnote["pmid:21553931"]
    assert boswellia.title.startswith("Boswellia serrata: an overall assessment of in vitro, preclinical")
    assert boswellia.doi == "10.2165/11586800-000000000-00000" and boswellia.journal == "Clin Pharmacokinet"
    Reference.objects.all().delete()

    zotero = imported("asreview_pubmed_zotero.ris", "ris")
    assert len(zotero) == 6
    surgery = zotero["doi:10.1007/s10151-019-02080-0"]
    assert (
        surgery.title
        == "Outcomes of inflammatory bowel disease surgery in obese versus non-obese patients: a meta-analysis."
    )
    assert (surgery.published, surgery.published_precision) == (date(2019, 10, 1), "month")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "format"),
    [
        ("biopython_efetch_pubmed2.xml", "pubmed_xml"),
        ("biopython_medline_pubmed_result2.txt", "medline"),
        ("asreview_embase.ris", "ris"),
        ("asreview_ovid_psycinfo.ris", "ris"),
        ("asreview_scopus.ris", "ris"),
        ("asreview_pubmed_endnote.txt", "ris"),
    ],
)
def test_importing_a_real_export_again_changes_nothing(name, format):
    first = references_import(file=fixture(name), format=format)
    again = references_import(file=fixture(name), format=format)
    assert (again.created, again.updated, again.unchanged) == (0, 0, first.created)


# ------------------------------------------------------------------------- records without an English title

NOT_AVAILABLE = "[Not Available]."


def pubmed_record_xml(pmid: str, title: str, vernacular: str = "", abstract: str = "") -> str:
    """A PubmedArticle in the shape of NLM's DTD (an article without an English title)."""
    vernacular = f"<VernacularTitle>{vernacular}</VernacularTitle>" if vernacular else ""
    abstract = f"<Abstract><AbstractText>{abstract}</AbstractText></Abstract>" if abstract else ""
    return (
        f"<PubmedArticle><MedlineCitation><PMID>{pmid}</PMID><Article><Journal><JournalIssue><PubDate>"
        f"<Year>2021</Year></PubDate></JournalIssue><Title>Bulletin du cancer</Title></Journal>"
        f"<ArticleTitle>{title}</ArticleTitle>{abstract}{vernacular}</Article></MedlineCitation></PubmedArticle>"
    )


@pytest.mark.django_db
def test_pubmeds_not_available_title_is_no_title_and_the_vernacular_title_stands_in():
    content = pubmed_set(
        pubmed_record_xml("34969511", NOT_AVAILABLE, vernacular="« HER2-faible », un nouveau concept"),
        pubmed_record_xml("34969512", NOT_AVAILABLE, abstract="Les cancers du sein HER2-faible sont fréquents."),
        pubmed_record_xml("34969513", NOT_AVAILABLE),
    )
    summary = references_import(file=io.BytesIO(content), format="pubmed_xml")
    assert Reference.objects.get(source_id="34969511").title == "« HER2-faible », un nouveau concept"
    untitled = Reference.objects.get(source_id="34969512")
    assert untitled.title == "" and untitled.abstract.startswith("Les cancers du sein")
    assert summary.skipped == [
        {"record": 3, "id": "34969513", "reason": "The record has neither a title nor an abstract."}
    ]
    assert not Reference.objects.filter(title=NOT_AVAILABLE).exists()


@pytest.mark.django_db
def test_a_medline_not_available_title_gives_way_to_the_transliterated_title():
    content = (
        "PMID- 34969521\nDP  - 2021 Dec\nTI  - [Not Available].\nTT  - « HER2-faible », un nouveau concept.\n\n"
        "PMID- 34969522\nDP  - 2021\nTI  - [Not Available].\nAB  - Les cancers du sein HER2-faible sont\n"
        "      fréquents.\n"
    ).encode()
    references_import(file=io.BytesIO(content), format="medline")
    assert Reference.objects.get(source_id="34969521").title == "« HER2-faible », un nouveau concept."
    assert Reference.objects.get(source_id="34969522").title == ""


@pytest.mark.django_db
def test_a_record_with_only_an_abstract_and_a_year_keeps_its_content_key_on_every_import():
    content = b"TY  - ABST\nAB  - Poster: NAD+ precursors and grip strength in old mice.\nPY  - 2022\nER  - \n"
    references_import(file=io.BytesIO(content), format="ris")
    (reference,) = Reference.objects.all()
    assert reference.source_id.startswith("abstract:") and reference.title == ""
    again = references_import(file=io.BytesIO(content), format="ris")
    assert (again.created, again.unchanged) == (0, 1)
    assert list(Reference.objects.values_list("source_id", flat=True)) == [reference.source_id]
    # The same abstract in another file (other whitespace and case) is the same reference.
    respaced = b"TY  - ABST\nAB  - Poster:  NAD+ precursors and grip strength\n   in old MICE.\nPY  - 2022\nER  - \n"
    assert references_import(file=io.BytesIO(respaced), format="ris").created == 0
