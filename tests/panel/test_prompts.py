"""The panel's prompts are versioned: a change of wording must come with a new version (and new hashes here), and
every stored review names the exact prompt it was asked with."""

from reviewapp.panel.models import PanelPrompt
from reviewapp.panel.prompts import PROMPT_VERSION, PROMPTS, critique_messages, review_messages, revision_messages
from reviewapp.panel.services.common import stored_prompt
from reviewapp.selectors.packets import ProposalPacket
from screening.prompts import GROK_SUFFIX

# The texts of panel-v1. Changing a prompt means a new PROMPT_VERSION and new hashes, never an edit in place.
VERSION_HASHES = {
    "panel-v1": {
        "rubric_judge": "f140c8256834d37fb7a85054998164817a9118d79f83c50b2bda56909563b757",
        "domain_scientist": "eb030e789ea6905fcd1bccdb19599b3d30b99343052f24f1d29ac9dfa5b3b935",
        "methods_reviewer": "971e95b0cdccb718d41cac3c832dde2f3b82065637f3ea21e09b4efed81e9db4",
        "critic": "ffdb4608f32faef92eb40315be3474610f60076f6f56a2bebc0c77962547f33e",
        "revision_judge": "e9f7b49ad82b93cc4cd58fc0693a9ca5ef023fb6b5feebcdb280c772947c3469",
        # Added to panel-v1 without changing the others: the roles' user message under a system message without a role.
        "reference_reviewer": "0b9b67da762b1119913317b2b37b835a1b4ee91df539c79729cdb98c7c21f792",
    }
}
PACKET = ProposalPacket(
    question="Does the niche select clones?",
    background="",
    statement="The niche selects clones.",
    investigation_plan="Barcode tracing.",
)


def test_each_prompt_is_the_text_of_its_version():
    assert {kind: text.sha256 for kind, text in PROMPTS.items()} == VERSION_HASHES[PROMPT_VERSION]
    assert all(text.version == PROMPT_VERSION for text in PROMPTS.values())


def test_the_packet_sections_appear_and_empty_ones_are_left_out():
    system, user = review_messages("domain_scientist", PACKET)
    assert system == PROMPTS["domain_scientist"].system
    assert "RESEARCH QUESTION\nDoes the niche select clones?\n\nPROPOSAL\nClaim: The niche selects clones." in user
    assert "Investigation plan: Barcode tracing." in user
    assert "BACKGROUND" not in user and "Mechanism:" not in user and "Data requirements:" not in user
    assert "{" not in user.split("Return a JSON object", 1)[0]  # every placeholder filled


def test_grok_endpoints_get_the_protocols_extra_sentence():
    for system, user in (
        review_messages("rubric_judge", PACKET, grok=True),
        critique_messages(PACKET, PACKET, grok=True),
        revision_messages(PACKET, PACKET, grok=True),
    ):
        assert system.endswith(GROK_SUFFIX) and user.endswith(GROK_SUFFIX)


def test_a_prompt_is_stored_once_per_text(db):
    first, again = stored_prompt("critic"), stored_prompt("critic")
    assert first.pk == again.pk and PanelPrompt.objects.count() == 1
    assert (first.kind, first.version, first.template) == ("critic", PROMPT_VERSION, PROMPTS["critic"].template)


def test_the_reference_reads_the_roles_user_message_without_a_roles_framing():
    system, user = review_messages("reference_reviewer", PACKET)
    for role in ("rubric_judge", "domain_scientist", "methods_reviewer"):
        role_system, role_user = review_messages(role, PACKET)
        assert user == role_user and role_system.endswith(system) and role_system != system
    assert system == "Answer with JSON only."
