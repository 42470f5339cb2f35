"""The demo corpus: thirty references on the demo's topics in the biology of ageing, written for the demonstration.
Their titles and abstracts are illustrative text, not real articles (no PMID, no DOI); each is marked as demo data
(source "demo", is_demo) and names the demo corpus as its journal.

Loading is idempotent: a reference is updated when its text in references.json changed and left alone otherwise.
"""

import json
from pathlib import Path

from literature import retrieval
from literature.importers.records import ParsedReference, partial_date
from literature.models import Reference
from literature.services import ReferenceWriter, references_upsert

DEMO_REFERENCES_FILE = Path(__file__).with_name("references.json")
DEMO_JOURNAL = "Open Hypothesis demo corpus (illustrative text, not a real article)"


def _demo_reference(entry: dict) -> ParsedReference:
    published, precision = partial_date(*entry["published"].split("-"))
    return ParsedReference(
        source=Reference.Source.DEMO,
        source_id=entry["id"],
        title=entry["title"],
        abstract=entry["abstract"],
        journal=DEMO_JOURNAL,
        published=published,
        published_precision=precision,
        raw=json.dumps(entry, ensure_ascii=False),
        is_demo=True,
    )


def demo_references_load() -> ReferenceWriter:
    """Write the demo corpus and index it; the returned writer holds the counts (created, updated, unchanged)."""
    entries = json.loads(DEMO_REFERENCES_FILE.read_text(encoding="utf-8"))
    writer = references_upsert(references=[_demo_reference(entry) for entry in entries])
    retrieval.index_references()
    return writer
