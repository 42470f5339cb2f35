"""The simulated model server answers the panel's prompts over all three wire protocols with well-formed, varied,
labelled JSON: unknown and inapplicable scores, some malformed replies, and a position bias the ratings page
measures; `setup_roster` gives every panel role a model."""

import pytest

from reviewapp.panel.models import PanelReview, ReferenceReview
from reviewapp.panel.profile import INAPPLICABLE, UNKNOWN
from reviewapp.panel.prompts import (
    critique_messages,
    parse_critique,
    parse_review,
    parse_revision,
    review_messages,
    revision_messages,
)
from reviewapp.panel.selectors import cohort_reference_diagnostics, position_bias
from reviewapp.panel.services.critique import critique_start
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.selectors.packets import ProposalPacket
from screening.llm.models import ModelEndpoint, RosterMember
from screening.llm.providers import complete
from screening.llm.simulator import SIMULATED_MARK, SimulatorConfig, start_simulator
from screening.management.commands.setup_roster import roster_setup_default
from tests.panel.support import make_cohort, proposal

BASE_PATH = {"openai": "/v1", "anthropic": "", "gemini": ""}


@pytest.fixture
def simulator(fast_retries):
    server = start_simulator(SimulatorConfig(seed=11))
    yield server
    server.shutdown()
    server.server_close()


def packet(n: int, full: bool = True) -> ProposalPacket:
    sections = {"investigation_plan": f"Plan {n}.", "data_requirements": f"Data {n}."} if full else {}
    return ProposalPacket(
        question="Does the niche select clones?",
        background="",
        statement=f"Claim number {n}.",
        mechanism=f"Mechanism {n}.",
        prediction=f"Prediction {n}.",
        **sections,
    )  # noqa: E501


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
def test_every_panel_prompt_gets_a_readable_labelled_reply(db, simulator, protocol):
    endpoint = ModelEndpoint.objects.create(
        display_name=f"Simulated {protocol}",
        company="Simulated",
        protocol=protocol,
        api_key_env="NO_SUCH_SET_API_KEY",
        base_url=simulator.url + BASE_PATH[protocol],
        model_id=f"simulated-{protocol}",
        is_simulated=True,
    )
    readings = []
    for system, user, parse in (
        (*review_messages("methods_reviewer", packet(1)), parse_review),
        (*critique_messages(packet(1), packet(2)), parse_critique),
        (*revision_messages(packet(1, full=False), packet(1)), parse_revision),
    ):
        completion = complete(endpoint=endpoint, system=system, user=user, purpose="panel_review")
        assert completion.usable and completion.call.simulated
        readings.append(parse(completion.text))
    review, critique, revision = readings
    if review.complete:  # a few replies are malformed on purpose
        assert review.value["rationale"].startswith(SIMULATED_MARK)
    assert critique.complete and critique.value["preference"] in ("a", "b", "tie", "insufficient")
    assert revision.complete and revision.value["rationale"].startswith(SIMULATED_MARK)


def test_replies_vary_with_unknown_inapplicable_and_malformed_ones(db, fast_retries):
    simulator = start_simulator(SimulatorConfig(seed=11, panel_malformed_share=0.2))
    endpoint = ModelEndpoint.objects.create(
        display_name="Simulated",
        company="Simulated",
        protocol="openai",
        api_key_env="NO_SUCH_SET_API_KEY",
        base_url=simulator.url + "/v1",
        model_id="simulated-panel",
        is_simulated=True,
    )
    words, numbers, eligible, malformed = set(), set(), set(), 0
    for n in range(60):
        system, user = review_messages("rubric_judge", packet(n, full=n % 3 != 0))
        reading = parse_review(complete(endpoint=endpoint, system=system, user=user, purpose="panel_review").text)
        if not reading.complete:
            malformed += 1
            continue
        eligible.add(reading.value["eligible"])
        for score in reading.value["scores"].values():
            (words if isinstance(score, str) else numbers).add(score)
    simulator.shutdown()
    simulator.server_close()
    assert words == {UNKNOWN, INAPPLICABLE} and len(numbers) >= 5 and eligible >= {"true", "false"}
    assert 0 < malformed < 30


def test_the_demo_roster_runs_the_panel_and_the_critique_on_the_simulator(
    db, simulator, settings, monkeypatch, coordinator, run_job
):
    for name in ("OPENAI_API_KEY", "XAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings.SIMULATOR_PORT = simulator.server_address[1]
    roster = roster_setup_default()
    roles = set(RosterMember.objects.filter(roster=roster).values_list("role", flat=True))
    assert roles >= {"rubric_judge", "domain_scientist", "methods_reviewer", "critic", "revision_judge"}
    cohort = make_cohort([proposal(f"s{n}", f"T-{n % 2}") for n in range(12)], user=coordinator)
    job = run_job(panel_start_for_cohort(cohort=cohort, user=coordinator).pk)
    assert job.state == "succeeded", job.error
    reviews = PanelReview.objects.all()
    assert reviews.count() == 36 and all(review.simulated for review in reviews)
    # The seed's panel model answers every role, and the fresh-context reference (the same model without a role)
    # answers every packet: the simulated server recognises the request, whichever model it names.
    assert {review.model_name for review in reviews} == {"GPT-5.6 Sol"}
    references = ReferenceReview.objects.all()
    assert references.count() == 12 and all(review.simulated and review.state == "done" for review in references)
    assert {review.model_name for review in references} == {"GPT-5.6 Sol"}
    diagnostics = cohort_reference_diagnostics(cohort)
    assert diagnostics.reviewed == 12 and diagnostics.simulated
    assert diagnostics.result.roles["rubric_judge"].weighted.n > 0
    job = run_job(critique_start(cohort=cohort, per_proposal=5, seed=3, user=coordinator).pk)
    assert job.state == "succeeded", job.error
    bias = position_bias(cohort)
    assert bias.decisive >= 10 and bias.share > 0.5  # the simulated critique favours the proposal shown first
