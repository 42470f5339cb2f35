"""What the selection has been worth (docs/protocol.md#two-stages): one constant, stated by the docs, the public start
page and the API's protocol description, each with the caveat that it belongs to the measured roster."""

import re
from pathlib import Path

from screening.measured import MEASURED_SELECTION
from tests.screening_support import make_roster

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_docs_state_the_figures_of_the_one_constant():
    docs = _flat(DOCS.read_text())
    assert MEASURED_SELECTION.sentence in docs
    assert MEASURED_SELECTION.caveat in docs
    assert [(p.percent, p.matches, p.selected) for p in MEASURED_SELECTION.precision] == [
        (74, 14, 19),
        (64, 14, 22),
        (47, 9, 19),
    ]


def test_the_start_page_shows_what_selection_has_been_worth_with_the_caveat(client, db, server):
    make_roster(server.base_url)
    html = _flat(client.get("/open-hypothesis/").content.decode())
    section = html[html.index('id="measured"') :]
    for figure in (
        "<strong>74%</strong> (14 of 19)",
        "<strong>64%</strong> (14 of 22)",
        "<strong>47%</strong> (9 of 19)",
    ):
        assert figure in section
    assert "12–18%" in section and "Grok 4.5" in section and "Claude Opus 5.5" in section
    assert MEASURED_SELECTION.caveat.replace("'", "&#x27;") in section
    # The test roster forecasts with other models: the page says the figures do not apply to its runs.
    assert "these figures do not apply to its runs" in section


def test_the_api_describes_the_protocol_and_its_measurement_with_the_caveat(client, db, server):
    make_roster(server.base_url)
    body = client.get("/api/v1/open-hypothesis/protocol").json()
    assert body["protocol"] == "open-hypothesis-v2"
    measured = body["measured"]
    assert measured["selection"] == [
        {"generator": "Grok 4.5", "matches": 14, "selected": 19, "percent": 74},
        {"generator": "Claude Opus 5.5", "matches": 14, "selected": 22, "percent": 64},
        {"generator": "Gemini 4 Argon", "matches": 9, "selected": 19, "percent": 47},
    ]
    assert measured["random_percent"] == {"low": 12, "high": 18}
    assert measured["roster"] == {
        "stage1": ["GPT-6 Astra"],
        "stage2": ["Claude Sonnet 5.5", "Gemini 4 Argon", "Grok 4.5"],
    }
    assert measured["caveat"] == MEASURED_SELECTION.caveat and "roster" in measured["caveat"]
    assert body["roster_is_measured"] is False and "fc-astra" not in str(body)


def test_the_measured_roster_is_recognised_and_a_simulated_one_is_not():
    measured = {"stage1": ["GPT-6 Astra"], "stage2": ["Grok 4.5", "Gemini 4 Argon", "Claude Sonnet 5.5"]}
    assert MEASURED_SELECTION.holds_for({**measured, "simulated": False})
    assert not MEASURED_SELECTION.holds_for({**measured, "simulated": True})
    assert not MEASURED_SELECTION.holds_for({**measured, "stage2": ["Grok 4.5"], "simulated": False})
    assert not MEASURED_SELECTION.holds_for(None)
