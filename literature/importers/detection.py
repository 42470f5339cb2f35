"""Which format a file is in, told from its first bytes: the outer element of XML, MEDLINE's "PMID- ", RIS's
"TY  - ", Web of Science's "FN"/"PT" lines or tab-delimited header, BibTeX's "@type{", a CSV header naming a title
or abstract column. The earliest sign in the file wins (a RIS file from PubMed holds no "PMID- " line before its
first "TY  - "; an Ovid export has headers before it)."""

import re

# Bytes looked at.
HEAD = 1 << 16
_SIGNS = {
    "ris": re.compile(r"^TY  - ", re.MULTILINE),
    "medline": re.compile(r"^PMID- ?\d", re.MULTILINE),
    "wos": re.compile(r"^(?:FN |VR \d|PT [A-Z]\s*$|PT\t.*\t(?:TI|UT)\t)", re.MULTILINE),
    "bibtex": re.compile(r"^\s*@[A-Za-z]+\s*[{(]", re.MULTILINE),
}
_XML_ROOT = re.compile(r"<(?![?!])([A-Za-z_][\w.:-]*)")
_CSV_HEADER = re.compile(r"(?:^|[,;\t]\s*\"?)(title|abstract)\"?\s*(?:[,;\t]|$)", re.IGNORECASE)
NAMES = {
    "pubmed_xml": "PubMed XML",
    "medline": "MEDLINE text",
    "ris": "RIS",
    "wos": "a Web of Science export",
    "bibtex": "BibTeX",
    "csv": "CSV",
}


def detect(head: bytes) -> str | None:
    """The format a file starting with these bytes is in, or None when its first bytes do not tell."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith("<"):
        root = _XML_ROOT.search(text)
        return "pubmed_xml" if root and root.group(1) == "PubmedArticleSet" else None
    found = [(match.start(), name) for name, sign in _SIGNS.items() if (match := sign.search(text))]
    if found:
        return min(found)[1]
    first_line = text.split("\n", 1)[0]
    return "csv" if _CSV_HEADER.search(first_line) else None
