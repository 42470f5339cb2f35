"""The simulated server answers the inspiration judge with well-formed replies (positive with a quote taken verbatim
from the publication when it shares the hypothesis's key terms and names a design, comparator or measurement;
negative otherwise), now and then a malformed one; an audit of the demo cohort with the simulated roster sees those
outcomes, labelled simulated."""

from datetime import date

import pytest

from literature.models import Reference
from reviewapp.demo.cohort import demo_load
from reviewapp.inspiration.models import InspirationItem, InspirationJudgment
from reviewapp.inspiration.prompts import messages
from reviewapp.inspiration.services import audit_complete_here, audit_create, judge
from screening import llm
from screening.llm.models import ModelCall, RosterMember
from screening.llm.simulator import INSPIRATION_MALFORMED_SHARE, SimulatorConfig, answer_text, inspiration_reply
from tests.inspiration.support import make_reference
from tests.screening_support import simulated_default_roster

HYPOTHESIS = "Senolytic clearance of p16-positive cells restores haematopoietic stem cell function in aged mice."
RELATED = (
    "Senolytic clearance in aged haematopoietic niches. We treated aged mice with a senolytic cocktail and "
    "compared haematopoietic stem cell function with vehicle controls. Clearance of p16-positive cells was measured "
    "by flow cytometry."
)


@pytest.fixture
def simulated_judge(settings, monkeypatch, db):
    """The default roster's inspiration judge (setup_roster), on a simulated server: no provider key is set."""
    with simulated_default_roster(settings, monkeypatch, latency=0, seed=3):
        endpoint = llm.roster_endpoint(RosterMember.Role.INSPIRATION_JUDGE)
        assert endpoint.is_simulated and endpoint.display_name == "GPT-6 Luna"  # DFM-Bench's semantic judge
        yield endpoint


def unsaved_judgment(reference: Reference, text: str = HYPOTHESIS) -> InspirationJudgment:
    return InspirationJudgment(reference=reference, hypothesis_text=text, input_sha256="x")


def test_a_related_later_publication_is_positive_with_a_verbatim_quote(simulated_judge):
    title, abstract = RELATED.split(". ", 1)
    reference = make_reference("rel", title, abstract, date(2026, 6, 1))
    fields = judge(unsaved_judgment(reference), simulated_judge)
    assert (fields["judgment"], fields["quote_verified"]) == ("positive", True)
    assert fields["quote"] in abstract and fields["connection"] == "design"
    call = ModelCall.objects.get(pk=fields["model_call_id"])
    assert call.simulated and call.purpose == "inspiration"


def test_an_unrelated_publication_is_negative(simulated_judge):
    reference = make_reference("unrel", "Ocean salinity", "We compared salinity across seasons.", date(2026, 6, 1))
    assert judge(unsaved_judgment(reference), simulated_judge)["judgment"] == "negative"


def test_now_and_then_the_reply_is_malformed_and_the_judgement_fails(simulated_judge):
    """The malformed replies are chosen by the request's hash: find some among many requests, then see one fail
    through the whole path (asked twice, never read)."""
    publication = "(2026) Senolytic study. We treated aged mice with a senolytic cocktail and measured p16."
    users = [messages(hypothesis=f"{HYPOTHESIS} Variant {n}.", publication=publication)[1] for n in range(400)]
    malformed = [n for n, user in enumerate(users) if inspiration_reply(user) is None]
    assert 0.5 * INSPIRATION_MALFORMED_SHARE * 400 <= len(malformed) <= 2 * INSPIRATION_MALFORMED_SHARE * 400

    reference = make_reference(
        "m", "Senolytic study", "We treated aged mice with a senolytic cocktail and measured p16.", date(2026, 6, 1)
    )
    fields = judge(unsaved_judgment(reference, f"{HYPOTHESIS} Variant {malformed[0]}."), simulated_judge)
    assert fields["judgment"] == "failed"
    assert ModelCall.objects.filter(purpose="inspiration").count() == 2


def test_an_audit_of_the_demo_cohort_with_the_simulated_roster_is_labelled_simulated(simulated_judge, client):
    loaded = demo_load()
    audit = audit_complete_here(audit_id=audit_create(cohort=loaded.cohort, enqueue=False).pk)

    assert audit.state == "done" and audit.simulated and audit.judge["simulated"]
    outcomes = {
        "positive"
        if item.judgment and item.judgment.judgment == "positive"
        else "not_retrieved"
        if not item.retrieved
        else item.judgment.judgment
        for item in InspirationItem.objects.filter(audit=audit).select_related("judgment")
    }
    assert outcomes == {"positive", "negative", "failed", "not_retrieved"}
    # What a replay needs to draw the same: no seed in the requests; the simulated server's seed and fault shares.
    assert audit.judge["request_seed"] is None
    assert audit.judge["simulator"]["seed"] == 3 and audit.judge["simulator"]["malformed_share"] == 0
    for judgment in InspirationJudgment.objects.filter(audit=audit, judgment="positive"):
        assert judgment.quote_verified and judgment.quote in judgment.reference.abstract
    client.force_login(loaded.cohort.created_by)
    page = client.get(f"/inspiration/audits/{audit.pk}/").content.decode()
    assert "A simulated model gave the judgements" in page
    assert "None: its requests carry no sampling seed" in page and "seed <code>3</code>" in page


def test_the_simulated_judge_answers_alike_whichever_model_the_roster_names():
    """The roster's judge is configurable: renaming the simulated model changes none of its judgements."""
    publication = "(2026) Senolytic study. We treated aged mice with a senolytic cocktail and measured p16."
    for n in range(60):
        system, user = messages(hypothesis=f"{HYPOTHESIS} Variant {n}.", publication=publication)
        answers = {
            answer_text(system, user, model=model, config=SimulatorConfig(), draw=lambda: 1.0)
            for model in ("simulated-gpt-6-luna", "simulated-claude-sonnet-5-5", "simulated-own-judge")
        }
        assert len(answers) == 1
