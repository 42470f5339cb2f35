"""Defensive reading of model replies: JSON in fences or prose, duplicates rejected, ids checked."""

import json

import pytest

from screening.parsing import ReplyParseError, extract_json, parse_detailed_forecasts, parse_forecasts, parse_hypotheses

IDS = ["H1", "H2", "H3"]


def forecasts(*answers) -> str:
    return json.dumps({"forecasts": [{"id": label, "confirmed": value} for label, value in answers]})


def test_plain_json_is_read():
    assert extract_json('{"a": 1}') == {"a": 1}


def test_json_inside_code_fences_is_read():
    assert extract_json('Here you go:\n```json\n{"a": [1, 2]}\n```\nDone.') == {"a": [1, 2]}
    assert extract_json('```\n{"a": 2}\n```') == {"a": 2}


def test_json_after_and_before_prose_is_read():
    assert extract_json('Sure! My forecasts follow. {"a": {"b": true}} Hope this helps [1].') == {"a": {"b": True}}


def test_an_object_wins_over_a_bracketed_aside_in_prose():
    assert extract_json('As shown in [1], the answer is {"forecasts": []}') == {"forecasts": []}


@pytest.mark.parametrize("text", ["", "   ", "I cannot answer that.", "{not json}", None])
def test_text_without_json_is_rejected(text):
    with pytest.raises(ReplyParseError) as error:
        extract_json(text)
    assert error.value.kind == "not_json"


def test_duplicate_keys_are_rejected_not_silently_overwritten():
    with pytest.raises(ReplyParseError) as error:
        extract_json('{"forecasts": [{"id": "H1", "confirmed": true, "confirmed": false}]}')
    assert error.value.kind == "duplicate_key"
    with pytest.raises(ReplyParseError):
        extract_json('Answer: ```json\n{"a": 1, "a": 2}\n```')


def test_forecasts_with_every_id_are_complete():
    text = forecasts(("H1", True), ("H2", False), ("[H3]", True))
    parse = parse_forecasts(text, IDS)
    assert parse.votes == {"H1": True, "H2": False, "H3": True}
    assert parse.parsed and parse.complete and parse.problems == []


def test_missing_id_makes_the_reply_incomplete_and_keeps_the_valid_answers():
    parse = parse_forecasts('{"forecasts": [{"id": "H1", "confirmed": true}, {"id": "H3", "confirmed": false}]}', IDS)
    assert parse.votes == {"H1": True, "H2": None, "H3": False}
    assert parse.parsed and not parse.complete
    assert "missing id H2" in parse.problems


def test_repeated_id_gives_no_vote_for_that_id():
    text = (
        '{"forecasts": [{"id": "H1", "confirmed": true}, {"id": "H1", "confirmed": true},'
        ' {"id": "H2", "confirmed": true}, {"id": "H3", "confirmed": true}]}'
    )
    parse = parse_forecasts(text, IDS)
    assert parse.votes["H1"] is None and parse.votes["H2"] is True
    assert not parse.complete
    assert "duplicate id H1" in parse.problems


def test_unknown_ids_are_reported_but_do_not_spoil_a_complete_reply():
    text = forecasts(("H1", True), ("H2", True), ("H3", False), ("H9", True))
    parse = parse_forecasts(text, IDS)
    assert parse.complete
    assert "unknown id H9" in parse.problems
    assert "H9" not in parse.votes


def test_a_non_boolean_answer_is_no_vote():
    text = forecasts(("H1", "yes"), ("H2", 1), ("H3", None))
    parse = parse_forecasts(text, IDS)
    assert parse.votes == {"H1": None, "H2": None, "H3": None}
    assert parse.parsed and not parse.complete
    assert "non-boolean answer for H1" in parse.problems


def test_a_reply_that_is_not_json_gives_no_vote_at_all():
    parse = parse_forecasts("I would need to research this first.", IDS)
    assert parse.votes == {"H1": None, "H2": None, "H3": None}
    assert not parse.parsed and not parse.complete
    assert parse.problems[0].startswith("not_json")


def test_a_json_reply_without_forecasts_array_gives_no_vote():
    parse = parse_forecasts('{"answer": "yes"}', IDS)
    assert not parse.parsed and parse.problems == ["no forecasts array"]


def test_forecasts_after_prose_and_in_fences_are_read():
    text = 'Thinking done.\n```json\n{"forecasts": [{"id": "H1", "confirmed": false}]}\n```'
    assert parse_forecasts(text, ["H1"]).votes == {"H1": False}


def test_duplicate_keys_in_a_forecast_reply_make_it_unusable():
    parse = parse_forecasts('{"forecasts": [{"id": "H1", "confirmed": true, "confirmed": false}]}', ["H1"])
    assert not parse.parsed and parse.votes == {"H1": None}
    assert parse.problems[0].startswith("duplicate_key")


def test_detailed_forecasts_keep_probability_and_recommendation():
    text = (
        '{"protocol":"experimental-support-v1","forecasts":[{"id":"H1","p_experimental_support":0.7,'
        '"recommend_for_testing":true,"reason":"r","test":{"intervention":"i"}},'
        '{"id":"H2","p_experimental_support":null,"recommend_for_testing":false}]}'
    )
    parse = parse_detailed_forecasts(text, ["H1", "H2"])
    assert parse.complete
    assert parse.forecasts["H1"].p_experimental_support == 0.7
    assert parse.forecasts["H1"].recommend_for_testing is True
    assert parse.forecasts["H1"].test == {"intervention": "i"}
    assert parse.forecasts["H2"].p_experimental_support is None


def test_hypotheses_are_read_and_malformed_items_skipped_and_reported():
    text = """```json
{"hypotheses": [
  {"statement": " A causes B. ", "mechanism": "via C", "prediction": "D rises", "domain_category": "senescence"},
  {"statement": "", "mechanism": "m", "prediction": "p"},
  "not an object",
  {"statement": "E causes F.", "mechanism": "via G", "prediction": "H falls"},
  {"statement": "X", "mechanism": ["list"], "prediction": "p"}
], "notes": ""}
```"""
    hypotheses = parse_hypotheses(text)
    assert hypotheses == [
        {"statement": "A causes B.", "mechanism": "via C", "prediction": "D rises", "domain_category": "senescence"},
        {"statement": "E causes F.", "mechanism": "via G", "prediction": "H falls", "domain_category": ""},
    ]
    assert hypotheses.problems == [
        "item 2: no statement",
        "item 3 is not an object",
        "item 5: mechanism not text",
    ]


def test_a_generation_reply_that_is_not_json_gives_no_hypotheses():
    hypotheses = parse_hypotheses("Here are some ideas: first, ...")
    assert hypotheses == []
    assert hypotheses.problems and hypotheses.problems[0].startswith("not_json")
