"""Speed of literature retrieval (docs/protocol.md#retrieval-and-the-lexical-gate): one hypothesis searched over 100,000
references, on PostgreSQL and on the embedded default (SQLite), against the target median of 100 ms.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/literature_retrieval_speed.py
    .venv/bin/python benchmarks/literature_retrieval_speed.py --backend sqlite --references 20000

For each backend it builds a scratch database (PostgreSQL: `oh_bench_retrieval_…` on the server named by
DATABASE_URL, dropped at the end unless --keep; SQLite: a file in a temporary folder), migrates it, loads synthetic
references with varied abstracts (a Zipf-distributed vocabulary of 80,000 terms after a few dozen common ones, 120
to 320 words each), indexes them, runs ANALYZE on PostgreSQL (as autovacuum does after a bulk load), and times
`literature.retrieval.search()` for 50 hypotheses written from randomly chosen references (a paraphrase: some of
the reference's words, shuffled, inside hypothesis phrasing). One query warms the caches first and is not counted.
Then the same for 50 long texts, as an inspiration audit searches with a proposal's first 6000 characters: about
5,000 characters of generic prose (words drawn from the corpus's 2,000 most frequent), then the paraphrase, so the
query chooses among hundreds of terms and the telling ones come after them. It prints the medians and 90th
percentiles against the targets (the long texts' is LONG_TARGET_MEDIAN_MS), how often the source reference ranked
first and among the first five (what the judge reads), and exits with status 1 when a target is missed. Each backend
runs in a child process with its own settings.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter

from support import EXAMPLE_SERVER, Results, child_figures, scratch_database, setup_django

SCRATCH_DATABASE = "oh_bench_retrieval"
TARGET_MEDIAN_MS = 100
LONG_TARGET_MEDIAN_MS = 250
LONG_TEXT_CHARS = 6000

COMMON = (
    "cells mice aged ageing age increase decrease expression levels function activity role response model tissue "
    "loss signalling pathway effect treatment study human young old mouse protein gene results showed suggest "
    "associated mitochondrial inflammation senescence muscle stem blood liver brain metabolism lifespan"
).split()
FILLER = "the of in and with was were that by to not a for is are from".split()


def synthetic_corpus(count: int, seed: int):
    """(titles, abstracts): texts of a Zipf-distributed vocabulary, reproducible from the seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    syllables = "ka to mi ne ro sa li du pe va gi xo be fu ha zo qui tra pla sto cri mon gen cyt lyt phag kin".split()
    made = set()
    picker = random.Random(seed)
    while len(made) < 80_000:
        made.add("".join(picker.choice(syllables) for _ in range(picker.randint(2, 4))))
    vocabulary = np.array(COMMON + sorted(made))
    cumulative = np.cumsum(1.0 / np.arange(1, len(vocabulary) + 1) ** 1.05)
    cumulative /= cumulative[-1]
    filler = np.array(FILLER)

    def words(n: int) -> list[str]:
        drawn = vocabulary[np.searchsorted(cumulative, rng.random(n))]
        glue = filler[rng.integers(len(filler), size=n)]
        keep_glue = rng.random(n) < 0.45
        stops = rng.random(n) < 0.07
        out = []
        for word, joiner, with_glue, stop in zip(drawn, glue, keep_glue, stops, strict=True):
            out.append(word + ("." if stop else ""))
            if with_glue and not stop:
                out.append(joiner)
        return out

    titles = [" ".join(words(int(rng.integers(6, 12)))).capitalize().rstrip(".") for _ in range(count)]
    abstracts = [" ".join(words(int(rng.integers(120, 320)))).capitalize() + "." for _ in range(count)]
    return titles, abstracts


def hypothesis_from(title: str, abstract: str, picker: random.Random) -> str:
    """A hypothesis-like text sharing some of a reference's words, shuffled."""
    words = [word.strip(".") for word in (title + " " + abstract).split() if word not in FILLER]
    picked = picker.sample(words, min(24, len(words)))
    statement, mechanism, prediction = picked[:10], picked[10:18], picked[18:]
    return (
        f"In aged mice, {' '.join(statement)} increases lifespan. Mechanism: {' '.join(mechanism)} acts through "
        f"the pathway. Prediction: treated mice show {' '.join(prediction)} compared with controls."
    )


def long_text_from(hypothesis: str, vocabulary_text: list[str], picker: random.Random) -> str:
    """About LONG_TEXT_CHARS characters: generic words first, the hypothesis last."""
    opening: list[str] = []
    while sum(len(word) + 1 for word in opening) < LONG_TEXT_CHARS - len(hypothesis) - 200:
        opening.append(picker.choice(vocabulary_text))
    return (" ".join(opening) + ". " + hypothesis)[:LONG_TEXT_CHARS]


def timed_searches(retrieval, targets, texts, ids) -> dict:
    retrieval.search(texts[0], limit=20)  # warm-up, not counted
    timings, first, top5 = [], 0, 0
    for n, text in zip(targets[1:], texts[1:], strict=True):
        started = time.perf_counter()
        found = retrieval.search(text, limit=20)
        timings.append((time.perf_counter() - started) * 1000)
        ranked = [candidate.reference_id for candidate in found]
        first += ranked[:1] == [ids[f"bench-{n}"]]
        top5 += ids[f"bench-{n}"] in ranked[:5]
    timings.sort()
    return {
        "median_ms": round(statistics.median(timings), 1),
        "p90_ms": round(timings[int(len(timings) * 0.9) - 1], 1),
        "max_ms": round(timings[-1], 1),
        "source_first": first,
        "source_top5": top5,
    }


def child(references: int, queries: int) -> dict:
    """Runs with DATABASE_URL set to the scratch database: build, index, time. Returns the figures."""
    setup_django()
    from django.core.management import call_command
    from django.db import connection

    from literature import retrieval
    from literature.models import Reference

    call_command("migrate", verbosity=0)
    started = time.monotonic()
    titles, abstracts = synthetic_corpus(references, seed=20261129)
    generated = time.monotonic() - started
    started = time.monotonic()
    batch = 5000
    for offset in range(0, references, batch):
        Reference.objects.bulk_create(
            Reference(
                source=Reference.Source.CSV,
                source_id=f"bench-{n}",
                title=titles[n],
                abstract=abstracts[n],
                published_precision="year",
                content_sha256=f"{n:064d}",
            )
            for n in range(offset, min(offset + batch, references))
        )
    loaded = time.monotonic() - started
    started = time.monotonic()
    indexed = retrieval.index_references()
    indexing = time.monotonic() - started
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE literature_reference")

    ids = dict(Reference.objects.values_list("source_id", "pk"))
    picker = random.Random(7)
    targets = picker.sample(range(references), queries + 1)
    texts = [hypothesis_from(titles[n], abstracts[n], picker) for n in targets]
    short = timed_searches(retrieval, targets, texts, ids)
    counts = Counter(
        word.strip(".").lower() for n in picker.sample(range(references), 2000) for word in abstracts[n].split()
    )
    generic = [word for word, _ in counts.most_common(2000 + len(FILLER)) if word not in FILLER][:2000]
    long_texts = [long_text_from(text, generic, picker) for text in texts]
    long = timed_searches(retrieval, targets, long_texts, ids)
    return {
        "vendor": connection.vendor,
        "references": references,
        "generate_s": round(generated, 1),
        "load_s": round(loaded, 1),
        "index_s": round(indexing, 1),
        "indexed": indexed,
        "queries": queries,
        "long_terms_median": round(statistics.median(len(retrieval.terms(text)) for text in long_texts)),
        **short,
        **{f"long_{name}": value for name, value in long.items()},
    }


def run_child(env_url: str, args) -> dict:
    env = {**os.environ, "DATABASE_URL": env_url, "LOG_LEVEL": "WARNING"}
    command = [sys.executable, __file__, "--child", "--references", str(args.references)]
    command += ["--queries", str(args.queries)]
    return child_figures(command, env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["both", "postgresql", "sqlite"], default="both")
    parser.add_argument("--references", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL scratch database")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.references, args.queries)))
        return 0

    figures = []
    if args.backend in ("both", "sqlite"):
        folder = tempfile.mkdtemp(prefix="oh-bench-literature-")
        try:
            figures.append(run_child(f"sqlite:///{folder}/bench.sqlite3", args))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if args.backend in ("both", "postgresql"):
        server = os.environ.get("DATABASE_URL", EXAMPLE_SERVER)
        if not server.startswith("postgres"):
            server = EXAMPLE_SERVER
        with scratch_database(server, SCRATCH_DATABASE, keep=args.keep) as scratch_url:
            figures.append(run_child(scratch_url, args))

    results = Results()
    for f in figures:
        for label, prefix, target in (
            ("hypothesis", "", TARGET_MEDIAN_MS),
            ("6,000 characters", "long_", LONG_TARGET_MEDIAN_MS),
        ):
            details = (
                f"({f['references']:,} references, loaded in {f['load_s']} s, indexed in {f['index_s']} s; p90 "
                f"{f[prefix + 'p90_ms']} ms, max {f[prefix + 'max_ms']} ms; the source first "
                f"{f[prefix + 'source_first']}/{f['queries']}, in the top 5 {f[prefix + 'source_top5']}/{f['queries']}"
                + (f"; {f['long_terms_median']} distinct terms, median)" if prefix else ")")
            )
            results.record(
                f"retrieval on {f['vendor']}, query of a {label}, median of {f['queries']}",
                float(f[prefix + "median_ms"]),
                "ms",
                f"≤ {target} ms",
                f[prefix + "median_ms"] <= target,
                details,
            )
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())
