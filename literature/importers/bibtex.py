"""BibTeX (Scopus, Zotero, Google Scholar, JabRef exports), read by bibtexparser 2.

bibtexparser splits the file into blocks: entries, `@string` macros (resolved in the entries that use them),
`@comment`s and text between entries (ignored), and blocks it could not read. Entries are numbered from 1 in file
order, blocks that could not be read among them: such a block is skipped with its line, and the entries after it
are read. An entry that repeats a key, or one of its own fields (Scopus writes `funding_details` twice, and the same
key for two articles of one author and year), is read all the same, with the value given last.

Read from each entry: title, abstract, author (split at "and"; a braced group stays one name), journal (else
journaltitle, else booktitle), doi, the PMID (pmid, Scopus's pubmed_id, or eprint when eprinttype says PubMed),
and the date: biblatex's `date` ("2009-03", "2009-03-15"), else year with month ("mar", "March", "3") and day.
LaTeX in those values is decoded (accents, `\\&`, math symbols, pylatexenc) and protective braces removed. An
entry's id is its PMID, else its DOI, else its citation key, else a hash of its title (or abstract) and year.

The file is read a MiB at a time, cut before an entry's "@", each part parsed with the `@string` macros of the parts
before it."""

import re
import unicodedata
from collections.abc import Iterator

import bibtexparser
from bibtexparser.library import Library
from bibtexparser.model import Entry, ParsingFailedBlock, String
from pylatexenc.latex2text import LatexNodes2Text

from literature.importers import records
from literature.importers.records import FileUnreadable, Parsed, ParsedReference, Problem, clean
from literature.models import Reference

# Characters of text parsed at a time (the part is cut before the next line that opens a block).
PART = 1 << 20
_BLOCK_START = re.compile(r"^\s*@", re.MULTILINE)
_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:[/T].*)?$")
_PUBMED = ("pubmed", "pmid")
_latex = LatexNodes2Text()
# What exports write most, decoded without the general decoder (about half a millisecond a value): accents on a
# letter ({\"O}, \'{e}, {\v C}, \'{\i}), letters of their own ({\o}, \ss, {\i}) and escaped characters (\&, \%).
_COMBINING = {
    "'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304", ".": "\u0307",
    "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328", "r": "\u030a", "d": "\u0323",
    "b": "\u0331",
}  # fmt: skip
_ACCENT = re.compile(r"\\([`'^\"~=.]|[uvHckrdb](?=[\s{]))\s*\{?(\\[ij]\b|[A-Za-z])\}?")
_LETTER_NAMES = {"i": "ı", "j": "ȷ", "o": "ø", "O": "Ø", "ss": "ß", "ae": "æ", "AE": "Æ", "aa": "å", "AA": "Å"}
_LETTER_NAMES |= {"l": "ł", "L": "Ł", "oe": "œ", "OE": "Œ"}
_LETTER = re.compile(r"\\(" + "|".join(sorted(_LETTER_NAMES, key=len, reverse=True)) + r")\b(?:\{\})?")
_ESCAPED = re.compile(r"\\([&%$#_{}])")


def read(stream, known=None) -> Iterator[Parsed]:
    """Parsed entries of a binary stream of BibTeX text (UTF-8, with or without a byte-order mark)."""
    number = 0
    strings: dict[str, str] = {}  # the macros defined so far, by key
    for first_line, text in _parts(stream):
        seeded = Library(blocks=[String(key, value) for key, value in strings.items()])
        library = bibtexparser.parse_string(text, library=seeded)
        for block in library.blocks[len(strings) :]:
            inner = block.ignore_error_block if isinstance(block, ParsingFailedBlock) else block
            if isinstance(inner, String):
                strings[inner.key] = inner.value
            elif isinstance(inner, Entry):
                number += 1
                yield _parsed(inner, number)
            elif isinstance(block, ParsingFailedBlock) and inner is None:
                number += 1
                line = first_line + (block.start_line or 0)
                message = f"The entry at line {line} cannot be read ({_reason(block)}); it was skipped."
                yield Parsed(number, None, [Problem(number, "entry", message)])
    if number == 0:
        raise FileUnreadable("The file holds no BibTeX entries (“@article{key, …}”).")


def _parts(stream) -> Iterator[tuple[int, str]]:
    """(number of the part's first line, its text): about PART characters each, cut before a line opening a block."""
    lines: list[str] = []
    size, first = 0, 1
    for start, block in records.text_blocks(stream):
        for number, line in enumerate(block, start):
            if size >= PART and _BLOCK_START.match(line):
                yield first, "\n".join(lines)
                lines, size, first = [], 0, number
            lines.append(line)
            size += len(line) + 1
    if lines:
        yield first, "\n".join(lines)


def _reason(block: ParsingFailedBlock) -> str:
    """The parser's reason, on one line, without the advice to programmers it sometimes adds."""
    return clean(str(block.error).split(". Note:")[0]) or type(block.error).__name__


def _parsed(entry: Entry, number: int) -> Parsed:
    fields = {key.lower(): field.value for key, field in entry.fields_dict.items() if isinstance(field.value, str)}
    warnings: list[Problem] = []
    title = _text(fields.get("title"))
    abstract = _text(fields.get("abstract"))
    doi = records.usable_doi(records.normalise_doi(_bare(fields.get("doi"))), number, warnings)
    pmid = records.usable_pmid(_pmid(fields), number, warnings)
    published, precision = _published(fields, number, warnings)
    reference = ParsedReference(
        source=Reference.Source.BIBTEX,
        source_id=records.file_source_id(
            pmid=pmid, doi=doi, own_id=clean(entry.key), title=title, published=published, abstract=abstract
        ),
        pmid=pmid,
        doi=doi,
        title=title,
        abstract=abstract,
        journal=_text(fields.get("journal") or fields.get("journaltitle") or fields.get("booktitle")),
        authors=[name for name in map(_text, _names(fields.get("author", ""))) if name],
        published=published,
        published_precision=precision,
        raw=entry.raw or "",
    )
    problems = records.problems_of(reference, number, id_from_content=True)
    return records.identify(Parsed(number, None if problems else reference, problems, warnings))


def _unenclosed(value: str | None) -> str:
    """A value without its enclosing braces or quotes (an entry read despite a repeated field keeps them)."""
    value = (value or "").strip()
    if len(value) > 1 and value[0] + value[-1] in ("{}", '""'):
        value = value[1:-1]
    return value


def _bare(value: str | None) -> str:
    """A value without its enclosing braces or quotes, its whitespace collapsed."""
    return clean(_unenclosed(value))


def _text(value: str | None) -> str:
    """LaTeX decoded, protective braces removed, whitespace collapsed. Accents, letters and escaped characters are
    decoded here; what else has a command or math goes to pylatexenc's decoder. Text without either is cleaned
    once, at the end (removing braces and ties leaves nothing that collapsing whitespace first would change)."""
    value = _unenclosed(value)
    if "\\" in value or "$" in value:
        value = clean(value)
        if "\\" in value:
            value = _ESCAPED.sub(r"\1", _LETTER.sub(_letter, _ACCENT.sub(_accented, value)))
        if "\\" in value or "$" in value:
            return clean(_latex.latex_to_text(value))
    if "{" in value or "}" in value:
        value = value.replace("{", "").replace("}", "")
    return clean(value.replace("~", " ") if "~" in value else value)


def _accented(match: re.Match) -> str:
    letter = match.group(2)
    base = {"\\i": "i", "\\j": "j"}.get(letter, letter)
    return unicodedata.normalize("NFC", base + _COMBINING[match.group(1)])


def _letter(match: re.Match) -> str:
    return _LETTER_NAMES[match.group(1)]


def _names(authors: str) -> list[str]:
    """The names of an author list, split at "and" outside braces ("{Barnes and Noble}" is one name)."""
    names, depth, start = [], 0, 0
    authors = _bare(authors)
    for match in re.finditer(r"[{}]|\s+and\s+", authors):
        token = match.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth = max(depth - 1, 0)
        elif depth == 0:
            names.append(authors[start : match.start()])
            start = match.end()
    names.append(authors[start:])
    return names


def _pmid(fields: dict[str, str]) -> str:
    value = _bare(fields.get("pmid") or fields.get("pubmed_id"))
    if not value and _bare(fields.get("eprinttype")).lower() in _PUBMED:
        value = _bare(fields.get("eprint"))
    return value


def _published(fields: dict[str, str], number: int, warnings: list[Problem]):
    """biblatex's date, else year, month and day. A date that cannot be read is left out with a warning."""
    date_text, year = _bare(fields.get("date")), _bare(fields.get("year"))
    try:
        if date_text:
            match = _ISO_DATE.match(date_text)
            if match is None:
                raise ValueError(f"“{date_text}” is not a date like 2019, 2019-05 or 2019-05-12")
            return records.partial_date(match.group(1), match.group(2) or "", match.group(3) or "")
        if year:
            month = _bare(fields.get("month"))
            return records.partial_date(year, month, _bare(fields.get("day")) if month else "")
    except ValueError as exc:
        return records.date_left_out(number, "date" if date_text else "year/month", exc, warnings)
    return None, records.PRECISION_UNKNOWN
