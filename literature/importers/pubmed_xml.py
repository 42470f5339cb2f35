"""PubMed XML: an efetch `PubmedArticleSet` (also what PubMed's "Save → XML" writes).

Streamed with iterparse: each article is read when its closing tag arrives and then cleared, so memory stays
bounded whatever the file's size (an emptied element per article stays in the tree: about 100 bytes each). The raw
record is the article's own bytes from the file, cut from what the parser has read so far. Records are numbered
from 1 in file order.

A caller that can tell which articles the corpus already holds byte for byte passes `known`: those articles are not
read field by field again (the same bytes give the same reference), only their id and date (for its warning). The
first KNOWN_BATCH articles are cut from the bytes ahead and looked up before the file is parsed. When most of them
are held (a re-import), the whole file is read lightly: expat checks that it is well formed without building any
element, each article is cut from its bytes and its PMID read from them, and only the articles the corpus does not
hold (looked up a batch at a time) are parsed, from their bytes. Otherwise the file is parsed as above, and while
most articles of a batch are known, the next batch is first read that lightly from the parser's elements, the
articles that turn out not to be known being parsed again from their bytes; while most are not, articles are read
in full, and after each batch a look at the next few articles, cut from the bytes ahead of the parser before it
reads them (so none this import has written), tells whether known ones have begun.
"""

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from xml.parsers import expat

from literature.importers import records
from literature.importers.records import FileUnreadable, KnownRecord, Parsed, ParsedReference, Problem, clean
from literature.models import Reference

ROOT = "PubmedArticleSet"
ARTICLES = ("PubmedArticle", "PubmedBookArticle")
_CLOSING = {tag: re.compile(rb"</%s\s*>" % tag.encode()) for tag in ARTICLES}
_ANY_OPENING = re.compile(rb"<(%s)[\s>]" % "|".join(ARTICLES).encode())
# An article's own PMID is its first (MedlineCitation's or BookDocument's; later ones are those it cites).
_FIRST_PMID = re.compile(rb"<PMID\b[^>]*>([^<]*)</PMID>")
_DECLARED_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding=["']([A-Za-z0-9._-]+)["']""")
KNOWN_BATCH = 500
# While articles are read in full, this many of those ahead are looked up after each KNOWN_BATCH, to see whether
# known ones have begun.
_SAMPLE = 50
# Bytes read at a time while a file is read lightly.
_CHUNK = 1 << 16
# {PMID: the article's digest (records.raw_digest)} → {PMID: (the stored record's digest, its content hash, whether it
# is undated)} of those the corpus holds.
Known = Callable[[dict[str, bytes]], dict[str, tuple[bytes, str, bool]]]


class _RecordingStream:
    """Passes reads through and keeps the bytes read since the last article was cut out. Bytes read ahead (`ahead`)
    are passed on first."""

    def __init__(self, stream):
        self.stream = stream
        self.pending = bytearray()
        self.start = 0  # the offset in the file of pending's first byte
        self.ahead = bytearray()
        self.ahead_passed = 0  # of the bytes read ahead, those passed on
        self.encoding: str | None = None

    def read(self, size: int = -1) -> bytes:
        if self.ahead:
            end = len(self.ahead) if size < 0 else self.ahead_passed + size
            data = bytes(self.ahead[self.ahead_passed : end])
            self.ahead_passed += len(data)
            if self.ahead_passed == len(self.ahead):
                self.ahead, self.ahead_passed = bytearray(), 0
        else:
            data = self._read(size)
        self.pending += data
        return data

    def read_ahead(self, size: int) -> bool:
        """Read the next bytes into `ahead`, which read() then passes on; False at the end of the stream."""
        data = self._read(size)
        self.ahead += data
        return bool(data)

    def _read(self, size: int) -> bytes:
        data = self.stream.read(size)
        if self.encoding is None:
            declared = _DECLARED_ENCODING.match(data)
            self.encoding = declared.group(1).decode() if declared else "utf-8"
        return data

    def cut(self, before: int | None = None) -> bytes | None:
        """The next whole article's bytes, if its closing tag ends before the offset `before` in the file (when
        given); None when its tags cannot be found (a caller that has the parsed article then serialises it)."""
        span = _article_span(self.pending)
        if span is None or (before is not None and self.start + span[1] > before):
            return None
        start, end = span
        raw = bytes(self.pending[start:end])
        del self.pending[:end]
        self.start += end
        return raw

    @property
    def utf8(self) -> bool:
        return (self.encoding or "utf-8").lower().replace("-", "") in ("utf8", "ascii")

    def text(self, raw: bytes) -> str:
        return raw.decode(self.encoding or "utf-8", errors="replace")

    def digest(self, raw: bytes) -> bytes:
        if self.utf8:
            return records.bytes_digest(raw)
        return records.raw_digest(self.text(raw))


def read(stream, known: Known | None = None) -> Iterator[Parsed]:
    """Parsed records of a binary stream holding a PubmedArticleSet (see the module's docs for `known`)."""
    recording = _RecordingStream(stream)
    if known is not None and _mostly_held(recording, known):
        yield from _read_lightly(recording, known)
        return
    number = 0
    element = None
    light = False  # expecting articles the corpus holds
    batch: list[_Light] = []  # read lightly, not decided yet
    try:
        for _, element in ET.iterparse(recording, events=("end",)):
            if element.tag not in ARTICLES:
                continue
            number += 1
            raw = recording.cut()
            if known is not None and light and raw is not None:
                batch.append(_Light(number, _pmid(element), recording.digest(raw), raw))
                if len(batch) == KNOWN_BATCH:
                    light = yield from _decided(batch, recording, known)
                    batch = []
            else:
                yield from _decided(batch, recording, known)  # what was read before, in file order
                batch = []
                yield parse_article(element, number, raw=None if raw is None else recording.text(raw))
                if known is not None and number % KNOWN_BATCH == 0:
                    light = _held_ahead(recording, known, _SAMPLE)
            element.clear()
    except ET.ParseError as exc:
        yield from _decided(batch, recording, known)
        if number == 0 and "no element found" in str(exc):
            raise FileUnreadable("The file is empty.") from None
        raise FileUnreadable(f"The XML is not well-formed after record {number}: {exc}.") from None
    yield from _decided(batch, recording, known)
    # The last element to end is the outermost one.
    if element is not None and element.tag != ROOT:
        raise FileUnreadable(f"This is not a PubMed XML file: its outer element is <{element.tag}>, not <{ROOT}>.")


def _mostly_held(recording: _RecordingStream, known: Known) -> bool:
    """Whether the corpus holds most of the first KNOWN_BATCH articles (_held_ahead) of a file that can be read
    lightly: one in UTF-8 whose prolog declares no entities (its articles would not read on their own)."""
    if not _held_ahead(recording, known, KNOWN_BATCH) or not recording.utf8:
        return False
    first = _ANY_OPENING.search(recording.ahead)
    return first is not None and b"<!ENTITY" not in recording.ahead[: first.start()]


def _held_ahead(recording: _RecordingStream, known: Known, count: int) -> bool:
    """Whether the corpus holds most of the next `count` whole articles that the parser has not been given, cut
    from bytes read ahead (which the parser then reads as it would have). Looked up before they are read, they are
    none that this import has written."""
    ahead = recording.ahead
    position = recording.ahead_passed  # past the last article cut
    articles: dict[str, str] = {}
    while True:
        while len(articles) < count and (span := _article_span(ahead, position)):
            raw = bytes(ahead[span[0] : span[1]])
            if pmid := _raw_pmid(raw):
                articles[pmid] = recording.digest(raw)
            position = span[1]
        if len(articles) >= count or not recording.read_ahead(_CHUNK):
            break
    if not articles:
        return False
    stored = known(articles)
    held = sum(1 for pmid, digest in articles.items() if _held(stored, pmid, digest))
    return 2 * held >= len(articles)


def _read_lightly(recording: _RecordingStream, known: Known) -> Iterator[Parsed]:
    """Every article of a file the corpus mostly holds (see the module's docs): expat, without handlers but for the
    first element's start (the outer element) and an undefined entity (refused as ElementTree refuses it), checks the
    file well formed; the articles before an error are read, and the error is reported as the parser reports one."""
    parser = expat.ParserCreate()
    outer: list[str] = []
    refused: list[tuple[str, int]] = []  # (why, at which offset) an undefined entity was refused

    def first_element(name, attributes):
        outer.append(name)
        parser.StartElementHandler = None

    def undefined_entity(name, is_parameter_entity):
        where = f"line {parser.CurrentLineNumber}, column {parser.CurrentColumnNumber}"
        refused.append((f"undefined entity &{name};: {where}", parser.CurrentByteIndex))
        raise expat.ExpatError(refused[-1][0])

    parser.StartElementHandler = first_element
    parser.SkippedEntityHandler = undefined_entity
    number = 0
    batch: list[_Light] = []

    def cut(before: int) -> Iterator[Parsed]:
        """The articles whose bytes the parser has gone past (their closing tag ends before `before`), a batch at a
        time."""
        nonlocal number, batch
        while (raw := recording.cut(before)) is not None:
            number += 1
            batch.append(_Light(number, _raw_pmid(raw), recording.digest(raw), raw))
            if len(batch) == KNOWN_BATCH:
                yield from _decided(batch, recording, known)
                batch = []

    try:
        while True:
            data = recording.read(_CHUNK)
            try:
                parser.Parse(data, not data)
            except expat.ExpatError as exc:
                error, at = refused[-1] if refused else (str(exc), parser.ErrorByteIndex)
                yield from cut(at)
                yield from _decided(batch, recording, known)
                raise FileUnreadable(f"The XML is not well-formed after record {number}: {error}.") from None
            # Outside a handler the parser's index is just past what it has parsed.
            yield from cut(parser.CurrentByteIndex)
            if not data:
                break
        yield from _decided(batch, recording, known)
    except ET.ParseError as exc:  # an article the corpus does not hold, parsed from its bytes alone
        raise FileUnreadable(f"The XML is not well-formed after record {number}: {exc}.") from None
    if outer and outer[0] != ROOT:
        raise FileUnreadable(f"This is not a PubMed XML file: its outer element is <{outer[0]}>, not <{ROOT}>.")


def _article_span(data: bytearray, position: int = 0) -> tuple[int, int] | None:
    """Where the next whole article of `data` from `position` starts and ends (by its tags), if there is one."""
    opening = _ANY_OPENING.search(data, position)
    closing = _CLOSING[opening.group(1).decode()].search(data, opening.end()) if opening else None
    return (opening.start(), closing.end()) if opening and closing else None


def _held(stored: dict[str, tuple[bytes, str, bool]], pmid: str, digest: bytes) -> bool:
    """Whether the corpus holds the article of that PMID with these very bytes (what `known` answered)."""
    return pmid in stored and stored[pmid][0] == digest


def _raw_pmid(raw: bytes) -> str:
    """An article's PMID read from its bytes ("" when it has none there; the article is then parsed)."""
    found = _FIRST_PMID.search(raw)
    return found.group(1).decode(errors="replace").strip() if found else ""


@dataclass(frozen=True)
class _Light:
    """An article read lightly: its number, PMID, and the digest and bytes of its text."""

    number: int
    pmid: str
    digest: bytes
    raw: bytes


def _decided(batch: list[_Light], recording: _RecordingStream, known: Known | None) -> Generator[Parsed, None, bool]:
    """The records of a batch read lightly: those the corpus holds byte for byte as KnownRecords, the others parsed
    from their bytes. Returns whether most were known. A dated stored article had no warning about its date; the
    date of an undated one is read again from its bytes for its warning."""
    if not batch or known is None:
        return False
    stored = known({article.pmid: article.digest for article in batch if article.pmid})
    hits = 0
    for article in batch:
        if _held(stored, article.pmid, article.digest):
            hits += 1
            _, content_sha256, undated = stored[article.pmid]
            found = KnownRecord(Reference.Source.PUBMED, article.pmid, content_sha256=content_sha256)
            warnings = _date_warnings(ET.fromstring(recording.text(article.raw)), article.number) if undated else []
            yield records.identify(Parsed(article.number, None, [], warnings, known=found))
        else:
            text = recording.text(article.raw)
            yield parse_article(ET.fromstring(text), article.number, raw=text)
    return 2 * hits >= len(batch)


def _pmid(element: ET.Element) -> str:
    holder = element.find("MedlineCitation")
    if holder is None:
        holder = element.find("BookDocument")
    return clean(holder.findtext("PMID")) if holder is not None else ""


def _date_warnings(element: ET.Element, number: int) -> list[Problem]:
    """The warning parse_article gives for the article's date, if any (without reading the rest)."""
    citation = element.find("MedlineCitation")
    if citation is not None:
        holder = citation.find("Article")
        journal = holder.find("Journal") if holder is not None else None
        issue = journal.find("JournalIssue") if journal is not None else None
        pub_date = issue.find("PubDate") if issue is not None else None
    else:
        holder = element.find("BookDocument")
        book = holder.find("Book") if holder is not None else None
        pub_date = book.find("PubDate") if book is not None else None
    warnings: list[Problem] = []
    try:
        _published(pub_date, holder.find("ArticleDate") if holder is not None else None)
    except ValueError as exc:
        records.date_left_out(number, "PubDate", exc, warnings)
    return warnings


def parse_article(element: ET.Element, number: int, raw: str | None = None) -> Parsed:
    """One PubmedArticle or PubmedBookArticle; raw is its text in the file, if known."""
    citation = element.find("MedlineCitation")
    book = element.find("BookDocument")
    if citation is not None:
        holder = citation.find("Article")
        pmid = clean(citation.findtext("PMID"))
        if holder is None:
            return Parsed(number, None, [Problem(number, "article", "The record has no <Article>.", pmid)])
        title = records.pubmed_title(_text(holder.find("ArticleTitle")), _text(holder.find("VernacularTitle")))
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
        title = records.pubmed_title(_text(book.find("ArticleTitle"))) or _text(book.find("Book/BookTitle"))
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
