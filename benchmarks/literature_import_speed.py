"""Speed of importing PubMed XML into the reference corpus, against the target the product promises.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/literature_import_speed.py

Needs PostgreSQL. It writes a PubMed efetch-style file of 100,000 articles (labelled abstracts, several authors,
full, month, year-only and MedlineDate dates) into a temporary folder, creates a scratch database
(oh_bench_literature_…) on the server named by DATABASE_URL, migrates it, and imports the file with
`manage.py import_references` in a child process, as an operator would. It measures:

- the import's wall time, process start to exit (target ≤ 90 s);
- the child's peak resident memory, read from its own rusage (the whole process, Django included; ≤ 500 MB),
  beside the peak of `manage.py check` (what the process holds before reading a byte);
- for information, importing the same file again (every reference unchanged).

The temporary file and the scratch database are removed at the end (`--keep` keeps the database). Exit status 1
when a target is missed.
"""

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

from support import all_passed, postgres_server, print_table, run_child, run_measured, scratch_database

SCRATCH_DATABASE = "oh_bench_literature"
RECORDS = 100_000
TARGET_SECONDS = 90
TARGET_MEGABYTES = 500

PYTHON = sys.executable

WORDS = (
    "ageing senescence frailty clonal haematopoiesis inflammation mitochondrial autophagy rapamycin metformin "
    "sarcopenia telomere epigenetic clock cohort randomised mice muscle liver kidney immune signalling pathway "
    "lifespan healthspan biomarker intervention caloric restriction NAD+ sirtuin β-catenin Müller öffentliche"
).split()
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def pub_date(rng: random.Random, number: int) -> str:
    year = 1990 + number % 35
    kind = number % 4
    if kind == 0:
        return f"<Year>{year}</Year><Month>{MONTHS[number % 12]}</Month><Day>{1 + number % 28:02d}</Day>"
    if kind == 1:
        return f"<Year>{year}</Year><Month>{MONTHS[number % 12]}</Month>"
    if kind == 2:
        return f"<Year>{year}</Year>"
    return f"<MedlineDate>{year} {MONTHS[number % 11]}-{MONTHS[number % 11 + 1]}</MedlineDate>"


def article(rng: random.Random, number: int) -> str:
    pmid = 10_000_000 + number
    sections = "".join(
        f'<AbstractText Label="{label}" NlmCategory="{label}">{sentence(rng, 45)} {sentence(rng, 30)}</AbstractText>'
        for label in ("BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS")
    )
    authors = "".join(
        f'<Author ValidYN="Y"><LastName>Author{rng.randrange(10_000)}</LastName><ForeName>Zoë</ForeName>'
        f"<Initials>Z</Initials><AffiliationInfo><Affiliation>Institute {rng.randrange(500)}, Universität "
        f"Heidelberg, Germany.</Affiliation></AffiliationInfo></Author>"
        for _ in range(6)
    )
    return (
        f'<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">{pmid}</PMID>'
        f'<Article PubModel="Print-Electronic"><Journal><ISSN IssnType="Electronic">1474-9726</ISSN>'
        f'<JournalIssue CitedMedium="Internet"><Volume>{number % 40}</Volume><Issue>{number % 12}</Issue>'
        f"<PubDate>{pub_date(rng, number)}</PubDate></JournalIssue><Title>Journal {number % 300} of ageing</Title>"
        f"<ISOAbbreviation>J Ageing {number % 300}</ISOAbbreviation></Journal>"
        f"<ArticleTitle>{sentence(rng, 14)}</ArticleTitle>"
        f'<ELocationID EIdType="doi" ValidYN="Y">10.1000/bench.{pmid}</ELocationID>'
        f"<Abstract>{sections}</Abstract>"
        f'<AuthorList CompleteYN="Y">{authors}</AuthorList><Language>eng</Language>'
        f'<PublicationTypeList><PublicationType UI="D016428">Journal Article</PublicationType></PublicationTypeList>'
        f"</Article></MedlineCitation><PubmedData><ArticleIdList>"
        f'<ArticleId IdType="pubmed">{pmid}</ArticleId><ArticleId IdType="doi">10.1000/bench.{pmid}</ArticleId>'
        f"</ArticleIdList></PubmedData></PubmedArticle>\n"
    )


def write_file(path: Path, records: int) -> None:
    rng = random.Random(4)
    with open(path, "w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January ')
        out.write('2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n<PubmedArticleSet>\n')
        for number in range(records):
            out.write(article(rng, number))
        out.write("</PubmedArticleSet>\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for inspection")
    parser.add_argument("--records", type=int, default=RECORDS, help="articles in the generated file")
    arguments = parser.parse_args()
    url = postgres_server()
    if url is None:
        return 2

    results = []
    with scratch_database(url, SCRATCH_DATABASE, keep=arguments.keep) as scratch_url:
        env = {
            **os.environ,
            "DATABASE_URL": scratch_url,
            "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
            "LOG_LEVEL": "WARNING",
        }
        with tempfile.TemporaryDirectory(prefix="oh-literature-bench-") as folder:
            path = Path(folder) / "pubmed_bench.xml"
            print(f"Writing {arguments.records:,} PubMed articles…", flush=True)
            write_file(path, arguments.records)
            megabytes = path.stat().st_size / 1024**2
            print(f"  {path.name}: {megabytes:,.0f} MB", flush=True)
            print("Migrating the scratch database…", flush=True)
            run_child([PYTHON, "manage.py", "migrate", "--verbosity", "0"], env)
            command = [PYTHON, "manage.py", "import_references", str(path), "--format", "pubmed_xml", "--no-progress"]

            _, baseline, _ = run_measured([PYTHON, "manage.py", "check"], env)
            print("Importing…", flush=True)
            seconds, peak, output = run_measured(command, env)
            print(f"  {output.strip()}", flush=True)
            expected = f"Imported {arguments.records} references"
            assert expected in output, output
            results.append(("import time", f"{seconds:.1f} s", f"≤ {TARGET_SECONDS} s", seconds <= TARGET_SECONDS))
            results.append(
                ("import peak memory", f"{peak:.0f} MB", f"≤ {TARGET_MEGABYTES} MB", peak <= TARGET_MEGABYTES)
            )
            results.append(("  of which the process itself", f"{baseline:.0f} MB", "(manage.py check)", True))
            rate = arguments.records / seconds
            results.append(("import rate", f"{rate:,.0f} records/s", f"({megabytes:,.0f} MB file)", True))

            print("Importing the same file again…", flush=True)
            seconds, peak, output = run_measured(command, env)
            print(f"  {output.strip()}", flush=True)
            assert f"{arguments.records} unchanged" in output, output
            results.append(("re-import, all unchanged", f"{seconds:.1f} s, {peak:.0f} MB", "(information)", True))
    print_table(results)
    return 0 if all_passed(results) else 1


if __name__ == "__main__":
    sys.exit(main())
