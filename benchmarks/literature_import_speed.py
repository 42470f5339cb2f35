"""Speed of importing references into the corpus (PubMed XML, MEDLINE, RIS, Web of Science, BibTeX), each as a
ratio to what a user would script instead, measured in turn with it on the same file.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/literature_import_speed.py

Needs PostgreSQL. It writes a PubMed efetch-style file of 100,000 articles (labelled abstracts, six authors, full,
month, year-only and MedlineDate dates; about 5 kB each) and MEDLINE, RIS, Web of Science (plain text) and BibTeX
(as Scopus writes it) files of 20,000 records into a temporary folder, creates a scratch database on the server
named by DATABASE_URL and migrates it. Then, for each file, `--repeats` rounds (3), each in child processes one after
another:

1. the reference, what a user would script instead: the maintained parser of the format (lxml's iterparse keeping
   id, title and abstract, Biopython's Medline.parse, rispy, bibtexparser, and a Web of Science line reader, there
   being no maintained one) followed by a plain psycopg COPY of id, title and abstract into a scratch table;
2. the first import: `manage.py import_references` of the file, run in a child process (Django's start not timed)
   into an emptied corpus;
3. the bare parse, the least reading the file takes (the standard library's iterparse for XML; lines split into tag
   and value for the line formats);
4. the re-import of the same file, every record unchanged.

The figures are CPU time: the process's own and that of its PostgreSQL backend (/proc/<pid>/schedstat), which other
work on a busy machine lengthens far less than wall time (single wall-time imports moved by ±30% on the shared
2-core machine). Each ratio is the median of the rounds' pairs, with their spread and the load average printed:

- the first import per record, to the reference (goal ≤ 2.5×), and for information the same in wall time and the
  import's CPU to the bare parse;
- for reference, the import's writer alone: the first WRITE_ALONE usable records of the file, read beforehand, written
  as a file import writes them (content hash, raw digest, the COPY into the corpus and the server's inserts), in a
  transaction then rolled back, before the rounds, into the empty corpus; its CPU (the server's included) to the
  reference's, and the part of it that is the writing process's own. An import does that work besides reading
  the file: when the writer alone costs the goal's multiple of the reference, no reader can bring the import
  within the goal;
- the re-import per record, to the bare parse for the formats whose re-import skips stored records by their bytes
  (goal ≤ 1.5×) and to the reference for BibTeX (≤ 2.5×); its wall time for information;
- the PubMed import's wall time, process start to exit (median; target ≤ 40 s for 100,000 records) and the peak
  resident memory of the import processes (their own rusage, Django included; ≤ 300 MB).

The temporary files and the scratch database are removed at the end (`--keep` keeps the database). Exit status 1
when a goal or target is missed.
"""

import argparse
import io
import itertools
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from support import (
    Results,
    child_figures,
    load_average,
    postgres_server,
    run_child,
    run_measured,
    scratch_database,
    setup_django,
)

SCRATCH_DATABASE = "oh_bench_literature"
RECORDS = 100_000
LINE_RECORDS = 20_000
WRITE_ALONE = 20_000  # records the writer alone writes (all read into memory first)
TARGET_SECONDS = 40  # for RECORDS articles
TARGET_MEGABYTES = 300
IMPORT_GOAL = 2.5  # to what a user would script: the maintained parser and a plain COPY
REIMPORT_GOAL = 1.5  # to the bare parse, for the formats whose re-import skips stored records by their bytes
BY_DIGEST = ("pubmed_xml", "medline", "ris", "wos")
REFERENCE_NAMES = {
    "pubmed_xml": "lxml iterparse",
    "medline": "Biopython Medline.parse",
    "ris": "rispy",
    "wos": "a Web of Science line reader",
    "bibtex": "bibtexparser",
}

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


def _wrapped(tag: str, text: str, width: int = 82) -> str:
    """A MEDLINE field: the tag padded to four columns, long values continued on lines indented by six spaces."""
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return f"{tag:<4}- " + "\n      ".join(lines) + "\n"


def medline_record(rng: random.Random, number: int) -> str:
    pmid = 20_000_000 + number  # not the PubMed XML file's articles
    year = 1990 + number % 35
    authors = [(f"Author{rng.randrange(10_000)}", "Zoë") for _ in range(6)]
    abstract = " ".join(
        f"{label}: {sentence(rng, 45)} {sentence(rng, 30)}" for label in ("BACKGROUND", "METHODS", "RESULTS")
    )
    return (
        f"PMID- {pmid}\nOWN - NLM\nSTAT- MEDLINE\nDP  - {year} {MONTHS[number % 12]} {1 + number % 28:02d}\n"
        + _wrapped("TI", sentence(rng, 14))
        + f"LID - 10.1000/bench.{pmid} [doi]\n"
        + _wrapped("AB", abstract)
        + "".join(f"FAU - {last}, {fore}\nAU  - {last} Z\n" for last, fore in authors)
        + f"LA  - eng\nPT  - Journal Article\nTA  - J Ageing {number % 300}\nJT  - Journal {number % 300} of ageing\n"
        f"AID - 10.1000/bench.{pmid} [doi]\nSO  - J Ageing {number % 300}. {year};{number % 40}({number % 12}).\n\n"
    )


def ris_record(rng: random.Random, number: int) -> str:
    year = 1990 + number % 35
    authors = "".join(f"AU  - Author{rng.randrange(10_000)}, Zoë\n" for _ in range(6))
    abstract = " ".join(f"{sentence(rng, 45)} {sentence(rng, 30)}" for _ in range(3))
    return (
        f"TY  - JOUR\nTI  - {sentence(rng, 14)}\n{authors}PY  - {year}\n"
        f"DA  - {year}/{1 + number % 12:02d}/{1 + number % 28:02d}\nJO  - Journal {number % 300} of ageing\n"
        f"AB  - {abstract}\nDO  - 10.1000/bench.r{number}\nID  - bench-{number}\nER  - \n\n"
    )


def wos_record(rng: random.Random, number: int) -> str:
    """A Web of Science plain-text record: wrapped title, six AU and AF lines, a long abstract, PD and PY."""
    year = 1990 + number % 35
    authors = [f"Author{rng.randrange(10_000)}" for _ in range(6)]
    abstract = " ".join(f"{sentence(rng, 45)} {sentence(rng, 30)}" for _ in range(3))
    title = sentence(rng, 14)
    cut = title.rfind(" ", 0, 60)
    return (
        "PT J\n"
        + "AU "
        + "\n   ".join(f"{last}, Z" for last in authors)
        + "\n"
        + "AF "
        + "\n   ".join(f"{last}, Zoë" for last in authors)
        + "\n"
        + f"TI {title[:cut]}\n   {title[cut + 1 :]}\nSO JOURNAL {number % 300} OF AGEING\nLA English\nDT Article\n"
        + f"AB {abstract}\nC1 Univ Heidelberg, Inst {rng.randrange(500)}, Heidelberg, Germany.\n"
        + f"PD {MONTHS[number % 12].upper()} {1 + number % 28}\nPY {year}\nVL {number % 40}\nBP 1\nEP 9\n"
        + f"DI 10.1000/bench.w{number}\nUT WOS:{number:015d}\nER\n\n"
    )


def bibtex_record(rng: random.Random, number: int) -> str:
    """A BibTeX entry as Scopus writes them: braced values, a long abstract, month, DOI, one LaTeX accent."""
    year = 1990 + number % 35
    authors = " and ".join(f"Author{rng.randrange(10_000)}, Z." for _ in range(5)) + ' and M{\\"u}ller, J.'
    abstract = " ".join(f"{sentence(rng, 45)} {sentence(rng, 30)}" for _ in range(3))
    return (
        f"@ARTICLE{{Bench{number},\nauthor={{{authors}}},\ntitle={{{sentence(rng, 14)}}},\n"
        f"journal={{Journal {number % 300} of ageing}},\nyear={{{year}}},\nmonth={{{MONTHS[number % 12]}}},\n"
        f"volume={{{number % 40}}},\ndoi={{10.1000/bench.b{number}}},\nabstract={{{abstract}}},\n"
        f"document_type={{Article}},\nsource={{Scopus}},\n}}\n\n"
    )


def write_file(path: Path, records: int, format: str = "pubmed_xml") -> None:
    rng = random.Random(4)
    with open(path, "w", encoding="utf-8") as out:
        if format == "pubmed_xml":
            out.write('<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st ')
            out.write('January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n')
            out.write("<PubmedArticleSet>\n")
        elif format == "wos":
            out.write("\ufeffFN Clarivate Analytics Web of Science\nVR 1.0\n")
        record = {
            "pubmed_xml": article,
            "medline": medline_record,
            "ris": ris_record,
            "wos": wos_record,
            "bibtex": bibtex_record,
        }[format]
        for number in range(records):
            out.write(record(rng, number))
        if format == "pubmed_xml":
            out.write("</PubmedArticleSet>\n")
        elif format == "wos":
            out.write("EF\n")


# ------------------------------------------------------------------------------------------------ the floor


def bare_parse(path: Path, format: str) -> int:
    """The least reading the file takes: PubMed XML through the standard library's iterparse, each article cleared
    once read; MEDLINE and RIS as lines of UTF-8 split into tag and value and grouped into records. Returns the
    records seen."""
    records = 0
    with open(path, "rb") as stream:
        if format == "pubmed_xml":
            for _, element in ET.iterparse(stream, events=("end",)):
                if element.tag == "PubmedArticle":
                    records += 1
                    element.clear()
            return records
        if format == "bibtex":  # lines decoded, an entry counted at each line opening one
            for raw in stream:
                records += raw.decode("utf-8").startswith("@")
            return records
        fields: list[tuple[str, str]] = []
        wos = format == "wos"
        for raw in stream:
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line.strip():
                records += bool(fields)
                fields = []
            elif wos and line[:1] != " ":
                if line[:2] not in ("FN", "VR", "EF", "ER"):
                    fields.append((line[:2], line[3:]))
            elif line[4:6] == "- ":
                fields.append((line[:4].rstrip(), line[6:]))
            elif fields:
                tag, value = fields[-1]
                fields[-1] = (tag, f"{value} {line.strip()}")
        return records + bool(fields)


def reference_rows(path: Path, format: str) -> Iterator[tuple[str, str, str]]:
    """(id, title, abstract) of each record, read by the maintained parser of the format as a user would script it:
    lxml's iterparse for PubMed XML, Biopython's Medline.parse, rispy, bibtexparser, and a Web of Science line
    reader (there is no maintained one)."""
    if format == "pubmed_xml":
        from lxml import etree

        for _, element in etree.iterparse(str(path), events=("end",), tag="PubmedArticle"):
            title = element.find(".//ArticleTitle")
            abstract = " ".join("".join(part.itertext()) for part in element.iterfind(".//AbstractText"))
            yield element.findtext(".//PMID"), "".join(title.itertext()) if title is not None else "", abstract
            element.clear()
            while element.getprevious() is not None:
                del element.getparent()[0]
    elif format == "medline":
        from Bio import Medline

        with open(path, encoding="utf-8") as handle:
            for record in Medline.parse(handle):
                yield record.get("PMID", ""), record.get("TI", ""), record.get("AB", "")
    elif format == "ris":
        import rispy

        with open(path, encoding="utf-8") as handle:
            for entry in rispy.load(handle):
                yield entry.get("id") or entry.get("doi", ""), entry.get("title", ""), entry.get("abstract", "")
    elif format == "bibtex":
        import bibtexparser

        for entry in bibtexparser.parse_file(str(path)).entries:
            fields = entry.fields_dict
            title, abstract = fields.get("title"), fields.get("abstract")
            yield entry.key, title.value if title else "", abstract.value if abstract else ""
    else:
        record: dict[str, str] = {}
        tag = ""
        with open(path, encoding="utf-8-sig") as handle:
            for line in handle:
                if line.startswith("   "):
                    record[tag] += " " + line.strip()
                elif line.startswith("ER"):
                    yield record.get("UT", ""), record.get("TI", ""), record.get("AB", "")
                    record = {}
                elif line.strip():
                    tag = line[:2]
                    record[tag] = line[3:].rstrip("\n")


def backend_cpu_seconds(pid: int) -> float:
    """CPU seconds a PostgreSQL backend of this machine has spent so far (/proc/<pid>/schedstat, nanoseconds)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def reference_child(path: str, format: str) -> None:
    """The maintained parser's rows copied by a plain psycopg COPY into a scratch table, timed; prints its wall
    seconds, its CPU seconds (this process's and its connection's backend's) and the rows copied."""
    import psycopg

    url = os.environ["DATABASE_URL"]
    table = f"reference_pipeline_{os.getpid()}"
    with psycopg.connect(url) as connection:
        connection.execute(f"CREATE TABLE {table} (id text, title text, abstract text)")
        connection.commit()
        backend = connection.info.backend_pid
        started, client, server = time.perf_counter(), time.process_time(), backend_cpu_seconds(backend)
        rows = 0
        with connection.cursor() as cursor, cursor.copy(f"COPY {table} (id, title, abstract) FROM STDIN") as copy:
            for row in reference_rows(Path(path), format):
                copy.write_row(row)
                rows += 1
        connection.commit()
        seconds = time.perf_counter() - started
        cpu = time.process_time() - client + backend_cpu_seconds(backend) - server
        connection.execute(f"DROP TABLE {table}")
        connection.commit()
    print(json.dumps({"seconds": seconds, "cpu": cpu, "records": rows}))


def bare_child(path: str, format: str) -> None:
    started, cpu = time.perf_counter(), time.process_time()
    records = bare_parse(Path(path), format)
    print(json.dumps({"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu, "records": records}))


def import_child(path: str, format: str, empty: bool) -> None:
    """`manage.py import_references` of the file, run in this process (its start, Django's included, not timed),
    into an emptied corpus when `empty`: prints its wall seconds, its CPU seconds (this process's and its database
    connection's backend's), what it wrote and this process's peak resident megabytes."""
    setup_django()
    from django.core.management import call_command
    from django.db import connection

    from literature.models import Reference

    if empty:
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {connection.ops.quote_name(Reference._meta.db_table)} CASCADE")
    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    output = io.StringIO()
    started, client, server = time.perf_counter(), time.process_time(), backend_cpu_seconds(backend)
    call_command("import_references", path, "--format", format, "--no-progress", stdout=output, stderr=io.StringIO())
    seconds = time.perf_counter() - started
    cpu = time.process_time() - client + backend_cpu_seconds(backend) - server
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "cpu": cpu, "output": output.getvalue(), "megabytes": peak}))


def write_alone_child(path: str, format: str) -> None:
    """The writer alone (see the module's docs), in this process: prints its wall and CPU seconds (this process's
    and its connection's backend's), the part of that CPU that is this process's, and the records it wrote."""
    setup_django()
    from django.db import connection, transaction

    from literature.services import _READERS, ReferenceWriter

    read = _READERS[format]
    with open(path, "rb") as stream:
        references = [parsed.reference for parsed in itertools.islice(read(stream), WRITE_ALONE) if parsed.reference]
    with transaction.atomic():
        backend = connection.connection.info.backend_pid
        started, client, server = time.perf_counter(), time.process_time(), backend_cpu_seconds(backend)
        with ReferenceWriter(distinct_keys=True) as writer:
            for reference in references:
                writer.add(reference)
            writer.flush()
        seconds, own = time.perf_counter() - started, time.process_time() - client
        cpu = own + backend_cpu_seconds(backend) - server
        assert writer.created == len(references), (writer.created, len(references))
        transaction.set_rollback(True)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "own_cpu": own, "records": len(references)}))


def measure_format(results: Results, env: dict, folder: Path, format: str, records: int, repeats: int) -> None:
    """Each round in turn: the reference, the first import (into an emptied corpus), the bare parse, the re-import;
    every ratio is the median of the rounds' pairs, in CPU seconds (wall seconds beside it for information)."""
    path = folder / f"bench.{format}"
    print(f"Writing {records:,} {format} records…", flush=True)
    write_file(path, records, format)
    megabytes = path.stat().st_size / 1024**2

    def child(*options: str) -> dict:
        return child_figures([PYTHON, __file__, *options, str(path), format], env)

    def imported(empty: bool) -> dict:
        wall, peak, output = run_measured([PYTHON, __file__, "--import", str(path), format, *["--empty"] * empty], env)
        figures = json.loads(output.strip().splitlines()[-1])
        return {**figures, "process_seconds": wall, "process_megabytes": peak}

    print("Writing the first records alone (into the empty corpus)…", flush=True)
    written = child("--write-alone")
    references, firsts, bares, agains, loads = [], [], [], [], []
    for round in range(repeats):
        print(
            f"Round {round + 1} of {repeats} on {path.name} ({megabytes:,.0f} MB; load average {load_average()})…",
            flush=True,
        )
        references.append(child("--reference"))
        assert references[-1]["records"] == records, references[-1]
        firsts.append(imported(empty=True))
        assert f"Imported {records} references" in firsts[-1]["output"], firsts[-1]["output"]
        assert f"{records} new" in firsts[-1]["output"], firsts[-1]["output"]
        bares.append(child("--bare-parse"))
        assert bares[-1]["records"] == records, bares[-1]
        agains.append(imported(empty=False))
        assert f"{records} unchanged" in agains[-1]["output"], agains[-1]["output"]
        loads.append(os.getloadavg()[0])
    per_record = 1e6 / records
    load_note = f"load average {min(loads):.1f}–{max(loads):.1f}"
    reference_name = f"{REFERENCE_NAMES[format]} + a psycopg COPY of id, title and abstract, in turn"

    def cpu(figures: list[dict]) -> list[float]:
        return [figure["cpu"] for figure in figures]

    def wall(figures: list[dict]) -> list[float]:
        return [figure["seconds"] for figure in figures]

    results.ratio(
        f"{format} import of {records:,} records, CPU per record",
        cpu(firsts),
        cpu(references),
        "µs",
        IMPORT_GOAL,
        floor_name=f"{reference_name}; CPU of the process and its PostgreSQL backend",
        scale=per_record,
        note=f"({megabytes:,.0f} MB file; {load_note})",
    )
    results.ratio(
        f"{format} import, wall time per record",
        wall(firsts),
        wall(references),
        "µs",
        None,
        floor_name="the same reference's wall time",
        scale=per_record,
        note="(for information: a busy machine lengthens it)",
    )
    results.ratio(
        f"{format} import, CPU to the bare parse",
        cpu(firsts),
        cpu(bares),
        "µs",
        None,
        floor_name="bare parse of the same file, its CPU, in turn",
        scale=per_record,
        note="(for reference)",
    )
    own_cpu = 1e6 * written["own_cpu"] / written["records"]
    results.ratio(
        f"{format} import's writer alone, {written['records']:,} records, CPU per record",
        [written["cpu"] / written["records"]],
        [statistics.median(cpu(references)) / records],
        "µs",
        None,
        floor_name="the same reference's CPU per record",
        scale=1e6,
        note=f"(for reference: the first import's write without its reading, server included; {own_cpu:.1f} µs a "
        f"record of it the writing process's own CPU; wall {1e6 * written['seconds'] / written['records']:.1f} µs)",
    )
    by_digest = format in BY_DIGEST
    results.ratio(
        f"{format} re-import, every record unchanged, CPU per record",
        cpu(agains),
        cpu(bares) if by_digest else cpu(references),
        "µs",
        REIMPORT_GOAL if by_digest else IMPORT_GOAL,
        floor_name="bare parse of the same file, its CPU, in turn" if by_digest else f"{reference_name}, its CPU",
        scale=per_record,
        note=f"({load_note})",
    )
    results.ratio(
        f"{format} re-import, wall time per record",
        wall(agains),
        wall(bares) if by_digest else wall(references),
        "µs",
        None,
        floor_name="the same floor's wall time",
        scale=per_record,
        note="(for information)",
    )
    if format == "pubmed_xml":
        process = statistics.median(first["process_seconds"] for first in firsts)
        results.record(
            f"{format} import of {records:,} records",
            process,
            "s",
            f"≤ {TARGET_SECONDS * records / RECORDS:g} s",
            process <= TARGET_SECONDS * records / RECORDS,
            f"(process start to exit, median of {repeats})",
        )
        worst = max(figure["process_megabytes"] for figure in firsts + agains)
        results.record(
            f"{format} import peak memory", worst, "MB", f"≤ {TARGET_MEGABYTES} MB", worst <= TARGET_MEGABYTES
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for inspection")
    parser.add_argument("--records", type=int, default=RECORDS, help="PubMed articles in the generated file")
    parser.add_argument("--line-records", type=int, default=LINE_RECORDS, help="records of the MEDLINE and RIS files")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of each file (reference, import, re-import)")
    parser.add_argument("--formats", default="pubmed_xml,medline,ris,wos,bibtex", help="the formats to measure")
    parser.add_argument("--bare-parse", nargs=2, metavar=("FILE", "FORMAT"), help=argparse.SUPPRESS)
    parser.add_argument("--write-alone", nargs=2, metavar=("FILE", "FORMAT"), help=argparse.SUPPRESS)
    parser.add_argument("--reference", nargs=2, metavar=("FILE", "FORMAT"), help=argparse.SUPPRESS)
    parser.add_argument("--import", dest="import_", nargs=2, metavar=("FILE", "FORMAT"), help=argparse.SUPPRESS)
    parser.add_argument("--empty", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.bare_parse:
        bare_child(*arguments.bare_parse)
        return 0
    if arguments.write_alone:
        write_alone_child(*arguments.write_alone)
        return 0
    if arguments.reference:
        reference_child(*arguments.reference)
        return 0
    if arguments.import_:
        import_child(*arguments.import_, arguments.empty)
        return 0
    url = postgres_server()
    if url is None:
        return 2

    results = Results()
    with scratch_database(url, SCRATCH_DATABASE, keep=arguments.keep) as scratch_url:
        env = {
            **os.environ,
            "DATABASE_URL": scratch_url,
            "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
            "LOG_LEVEL": "WARNING",
        }
        with tempfile.TemporaryDirectory(prefix="oh-literature-bench-") as folder:
            print("Migrating the scratch database…", flush=True)
            run_child([PYTHON, "manage.py", "migrate", "--verbosity", "0"], env)
            _, baseline, _ = run_measured([PYTHON, "manage.py", "check"], env)
            print(f"  (the process itself, before reading a byte: {baseline:.0f} MB)", flush=True)
            for format in arguments.formats.split(","):
                records = arguments.records if format == "pubmed_xml" else arguments.line_records
                measure_format(results, env, Path(folder), format, records, arguments.repeats)
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())
