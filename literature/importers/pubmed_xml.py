"""PubMed XML: an efetch `PubmedArticleSet` (also what PubMed's "Save → XML" writes).

Streamed with iterparse: each article is read when its closing tag arrives and then cleared, so memory stays
bounded whatever the file's size (an emptied element per article stays in the tree: about 100 bytes each). The raw
record is the article's own bytes from the file, cut from what the parser has read so far. Records are numbered
from 1 in file order.
"""

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from literature.importers import records
from literature.importers.records import FileUnreadable, Parsed, ParsedReference, Problem, clean
from literature.models import Reference

ROOT = "PubmedArticleSet"
ARTICLES = ("PubmedArticle", "PubmedBookArticle")
_OPENING = {tag: re.compile(rb"<%s[\s>]" % tag.encode()) for tag in ARTICLES}
_CLOSING = {tag: re.compile(rb"</%s\s*>" % tag.encode()) for tag in ARTICLES}
_DECLARED_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding=["']([A-Za-z0-9._-]+)["']""")


class _RecordingStream:
    """Passes reads through and keeps the bytes read since the last article was cut out."""

    def __init__(self, stream):
        self.stream = stream
        self.pending = bytearray()
        self.encoding = None

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        if self.encoding is None:
            declared = _DECLARED_ENCODING.match(data)
            self.encoding = declared.group(1).decode() if declared else "utf-8"
        self.pending += data
        return data

    def cut(self, tag: str) -> str | None:
        """The next article's text, or None when its tags cannot be found (the caller then serialises)."""
        opening = _OPENING[tag].search(self.pending)
        closing = _CLOSING[tag].search(self.pending, opening.end()) if opening else None
        if closing is None:
            return None
        raw = bytes(self.pending[opening.start() : closing.end()])
        del self.pending[: closing.end()]
        return raw.decode(self.encoding, errors="replace")


def read(stream) -> Iterator[Parsed]:
    """Parsed records of a binary stream holding a PubmedArticleSet."""
    recording = _RecordingStream(stream)
    number = 0
    element = None
    try:
        for _, element in ET.iterparse(recording, events=("end",)):
            if element.tag in ARTICLES:
                number += 1
                yield parse_article(element, number, raw=recording.cut(element.tag))
                element.clear()
    except ET.ParseError as exc:
        if number == 0 and "no element found" in str(exc):
            raise FileUnreadable("The file is empty.") from None
        raise FileUnreadable(f"The XML is not well-formed after record {number}: {exc}.") from None
    # The last element to end is the outermost one.
    if element is not None and element.tag != ROOT:
        raise FileUnreadable(f"This is not a PubMed XML file: its outer element is <{element.tag}>, not <{ROOT}>.")


def parse_article(element: ET.Element, number: int, raw: str | None = None) -> Parsed:
    """One PubmedArticle or PubmedBookArticle; raw is its text in the file, if known."""
    citation = element.find("MedlineCitation")
    book = element.find("BookDocument")
    if citation is not None:
        holder = citation.find("Article")
        pmid = clean(citation.findtext("PMID"))
        if holder is None:
            return Parsed(number, None, [Problem(number, "article", "The record has no <Article>.", pmid)])
        title = _text(holder.find("ArticleTitle")) or _text(holder.find("VernacularTitle"))
        # One step at a time: a plain tag is looked up in C, a path by the Python ElementPath.
        journal_element = holder.find("Journal")
        issue = journal_element.find("JournalIssue") if journal_element is not None else None
        journal_info = citation.find("MedlineJournalInfo")
        journal = clean(
            (
                journal_element.findtext("Title") or journal_element.findtext("ISOAbbreviation")
                if journal_element is not None
                else None
            )
            or (journal_info.findtext("MedlineTA") if journal_info is not None else None)
        )
        pub_date = issue.find("PubDate") if issue is not None else None
        data = element.find("PubmedData")
        ids = data.find("ArticleIdList") if data is not None else None
    elif book is not None:
        holder = book
        pmid = clean(book.findtext("PMID"))
        title = _text(book.find("ArticleTitle")) or _text(book.find("Book/BookTitle"))
        journal = _text(book.find("Book/BookTitle"))
        pub_date = book.find("Book/PubDate")
        ids = element.find("PubmedBookData/ArticleIdList")
    else:
        return Parsed(number, None, [Problem(number, "article", "The record has no <MedlineCitation>.")])

    warnings: list[Problem] = []
    try:
        published, precision = _published(pub_date, holder.find("ArticleDate"))
    except ValueError as exc:
        published, precision = records.date_left_out(number, "PubDate", exc, warnings)

    reference = ParsedReference(
        source=Reference.Source.PUBMED,
        source_id=pmid,
        pmid=pmid,
        doi=_doi(ids, holder),
        title=title,
        abstract=_abstract(holder.find("Abstract")),
        journal=journal,
        authors=_authors(holder.find("AuthorList")),
        published=published,
        published_precision=precision,
        raw=raw if raw and f">{pmid}</PMID>" in raw else ET.tostring(element, encoding="unicode").strip(),
    )
    problems = records.problems_of(reference, number, id_field="pmid", id_label="PMID")
    return records.identify(Parsed(number, None if problems else reference, problems, warnings))


def _text(element: ET.Element | None) -> str:
    """All text inside an element, inline markup (<i>, <sup>, MathML) included."""
    if element is None:
        return ""
    return clean(element.text if len(element) == 0 else "".join(element.itertext()))


def _abstract(abstract: ET.Element | None) -> str:
    """The sections in order, each labelled ones as "LABEL: text", as PubMed itself shows them."""
    if abstract is None:
        return ""
    sections = []
    for section in abstract.iterfind("AbstractText"):
        text = section.text if len(section) == 0 else "".join(section.itertext())
        if text and not text.isspace():
            label = section.get("Label")
            sections.append(f"{clean(label)}: {text}" if label and not label.isspace() else text)
    # One collapse of the whitespace of all the sections: the same text as collapsing each and joining them.
    return clean(" ".join(sections))


def _authors(author_list: ET.Element | None) -> list[str]:
    """ "Last, Fore" per person (as MEDLINE's FAU), a group by its collective name."""
    if author_list is None:
        return []
    names = []
    for author in author_list.findall("Author"):
        if author.get("ValidYN") == "N":
            continue
        last = clean(author.findtext("LastName"))
        fore = clean(author.findtext("ForeName") or author.findtext("Initials"))
        name = f"{last}, {fore}" if last and fore else last or _text(author.find("CollectiveName"))
        if name:
            names.append(name)
    return names


def _doi(ids: ET.Element | None, holder: ET.Element) -> str:
    """The first well-formed DOI. PubMed's data holds the odd malformed one, which stays in the raw record rather
    than stopping a whole export that the coordinator cannot correct."""
    candidates = [] if ids is None else [i.text for i in ids.findall("ArticleId") if i.get("IdType") == "doi"]
    candidates += [i.text for i in holder.findall("ELocationID") if i.get("EIdType") == "doi"]
    return next((doi for doi in map(records.normalise_doi, candidates) if records.is_doi(doi)), "")


def _published(pub_date: ET.Element | None, article_date: ET.Element | None):
    """The issue's date (PubDate: Year/Month/Day or MedlineDate), else the electronic ArticleDate, else unknown."""
    if pub_date is not None:
        medline = clean(pub_date.findtext("MedlineDate"))
        if medline:
            return records.medline_date(medline)
        year = clean(pub_date.findtext("Year"))
        if year:
            return records.partial_date(year, clean(pub_date.findtext("Month")), clean(pub_date.findtext("Day")))
    if article_date is not None and clean(article_date.findtext("Year")):
        return records.partial_date(
            clean(article_date.findtext("Year")),
            clean(article_date.findtext("Month")),
            clean(article_date.findtext("Day")),
        )
    return None, records.PRECISION_UNKNOWN
