"""The inspiration judge's request is the one docs/protocol.md quotes, and its replies are read defensively."""

import json
from pathlib import Path

import pytest

from reviewapp.inspiration.prompts import messages, prompt_record, read_reply

PROTOCOL = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text(encoding="utf-8")


def test_the_request_is_quoted_exactly_in_the_protocol():
    system, user = messages(hypothesis="{hypothesis}", publication="{publication}")
    assert f"```text\n{system}\n```" in PROTOCOL
    assert f"```text\n{user}\n```" in PROTOCOL
    record = prompt_record()
    assert record["version"] == "inspiration-v1" and len(record["sha256"]) == 64


def test_texts_are_read_on_one_line():
    _, user = messages(hypothesis="A claim\nover two lines.", publication="(2026) Title.  An   abstract.")
    assert "HYPOTHESIS\nA claim over two lines.\n" in user
    assert "LATER PUBLICATION\n[R1] (2026) Title. An abstract.\n" in user


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"judgment": "positive", "connection": "design", "quote": "q", "reason": "r"}', ("positive", "design")),
        ('```json\n{"judgment": "Negative", "quote": null, "reason": "r"}\n```', ("negative", "")),
        (
            'Here it is: {"judgment": "positive", "connection": "evidence gap", "quote": "q"}',
            ("positive", "evidence_gap"),
        ),
    ],
)
def test_a_judgement_is_read_from_json_wherever_it_is(reply, expected):
    reading = read_reply(reply)
    assert (reading.judgment, reading.connection) == expected


@pytest.mark.parametrize(
    "reply",
    [
        None,
        "",
        "I cannot decide.",
        json.dumps({"judgment": "maybe", "quote": "q"}),
        json.dumps({"judgment": "positive", "quote": ["a list"]}),
        json.dumps(["positive"]),
        '{"judgment": "positive", "judgment": "negative"}',  # a repeated key makes the answer ambiguous
    ],
)
def test_a_reply_without_a_readable_judgement_reads_as_none(reply):
    assert read_reply(reply) is None
