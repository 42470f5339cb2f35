"""The digest a re-import tells unchanged records by (XXH3 of 128 bits of the raw record's UTF-8 bytes), the
migration that computed it again for the records stored before, and the blocks the line formats are read in, which
end after a record's closing line so that few records straddle two; and each record of a batch looked up together is
answered once, even when the file stops being readable inside the batch."""

import importlib
import io

import pytest
import xxhash
from django.apps import apps

from literature.importers import records, ris, wos
from literature.importers.records import KNOWN_BATCH, TEXT_BLOCK
from literature.models import Reference
from literature.services import references_import
from tests.literature.test_reimport_by_digest import ris_record

digest_again = importlib.import_module("literature.migrations.0016_raw_digest_xxh3").digest_again


def test_a_raw_record_digest_is_the_xxh3_of_its_utf8_bytes():
    raw = "TY  - JOUR\nTI  - Café\nER  - "

    assert records.raw_digest(raw) == records.bytes_digest(raw.encode()) == xxhash.xxh3_128_digest(raw.encode())
    assert len(records.raw_digest(raw)) == records.DIGEST_BYTES


def test_blocks_end_after_the_last_line_that_ends_a_record_and_keep_every_byte_and_line_number():
    content = "".join(ris_record(n, f"Title {n}") for n in range(1, 3 * TEXT_BLOCK // 60)).encode()

    blocks = list(records.byte_blocks(io.BytesIO(content), record_end=b"ER  -"))

    assert len(blocks) > 2
    assert b"".join(block for _, block in blocks) == content
    offset = 0
    for number, block in blocks:
        assert number == 1 + content.count(b"\n", 0, offset)
        offset += len(block)
    assert all(block.endswith(b"\nER  - \n") for _, block in blocks[:-1])


@pytest.mark.django_db
def test_a_record_longer_than_a_block_is_imported_whole_and_then_known_by_its_digest():
    keywords = "".join(f"KW  - keyword {n}\n" for n in range(TEXT_BLOCK // 15))
    long_record = f"TY  - JOUR\nTI  - Long\nDO  - 10.1000/long\n{keywords}ER  - \n\n"
    content = (ris_record(1, "Before") + long_record + ris_record(2, "After")).encode()
    assert len(content) > TEXT_BLOCK

    first = references_import(file=io.BytesIO(content), format="ris")
    again = references_import(file=io.BytesIO(content), format="ris")

    stored = Reference.objects.get(source_id="doi:10.1000/long")
    assert (first.created, again.unchanged, again.created + again.updated) == (3, 3, 0)
    assert stored.raw == long_record.rstrip("\n")
    assert bytes(stored.raw_digest) == xxhash.xxh3_128_digest(long_record.rstrip("\n").encode())


@pytest.mark.django_db
def test_the_upgrade_digests_every_stored_record_again_so_that_a_re_import_finds_them_unchanged():
    content = "".join(ris_record(n, f"Title {n}") for n in range(1, 6)).encode()
    references_import(file=io.BytesIO(content), format="ris")
    Reference.objects.update(raw_digest=b"\x00" * records.DIGEST_BYTES)  # as digested before the upgrade

    digest_again(apps, None)  # the migration's step (its schema editor unused)
    again = references_import(file=io.BytesIO(content), format="ris")

    stored = list(Reference.objects.values_list("raw", "raw_digest"))
    assert all(bytes(digest) == xxhash.xxh3_128_digest(raw.encode()) for raw, digest in stored)
    assert (again.unchanged, again.updated) == (5, 0)


@pytest.mark.parametrize(
    ("reader", "record", "bad"),
    [
        (
            ris.read,
            lambda n: f"TY  - JOUR\r\nTI  - Title {n}\r\nER  - \r\n\r\n".encode(),
            b"TY  - JOUR\r\nTI  - caf\xe9\r\nER  - \r\n\r\n",
        ),
        (wos.read, lambda n: f"PT J\nTI Title {n}\nUT WOS:{n:09d}\nER\n\n".encode(), b"PT J\nTI caf\xe9\nER\n\n"),
    ],
    ids=["ris", "wos"],
)
def test_records_before_bytes_that_are_not_utf8_in_a_looked_up_batch_are_answered_once(reader, record, bad):
    count = KNOWN_BATCH + 100
    content = b"".join(bad if n == 300 else record(n) for n in range(count))

    for known in (None, lambda source, digests: {}):
        numbers = []
        with pytest.raises(records.FileUnreadable):
            for parsed in reader(io.BytesIO(content), known):
                numbers.append(parsed.number)
        assert numbers == list(range(1, 301))
