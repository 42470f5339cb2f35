"""The prompt texts are the protocol's contract: byte for byte as in SPEC §4.2 and §4.4 (seed 000)."""

from screening import prompts

QUESTION = "How does remodelling of the bone-marrow niche affect the fitness of mutant clones?"
BACKGROUND = "Clonal haematopoiesis rises with age.\nThe niche changes too."

GENERATION_SYSTEM = (
    "You are a research scientist in the biology of ageing. You propose scientific hypotheses that answer research "
    "questions. Answer with JSON only."
)

GENERATION_TAIL = """The goal is hypotheses that answer the research question: specific, testable causal claims. \
Propose only hypotheses that, to your knowledge, have not yet been tested experimentally: do not restate a finding \
that the published literature has already established or refuted. Each hypothesis must be new as a specific causal \
claim, even when it builds on known mechanisms.

Propose ten hypotheses.

Return JSON {"hypotheses":[{"statement":"the hypothesis in 1-3 sentences","mechanism":"the proposed mechanism",\
"prediction":"a result that would support it over the alternatives","domain_category":"short label of its mechanism \
class"}],"notes":""}"""

GROK = (
    "You have no tools, no files and no internet access. Give your complete final answer in this single reply, in the "
    "requested format. Never describe what you are going to do; do it now. Your reply must start with { and be only "
    "the JSON object."
)
REMINDER = (
    'Return a JSON object with a "forecasts" array. For each hypothesis include its "id" and a boolean "confirmed".'
)
ITEMS = [("H1", "Text one. Mechanism: m1 Prediction: p1"), ("H2", "Text two. Mechanism: m2 Prediction: p2")]


def test_generation_prompt_with_background_is_exactly_the_spec_text():
    system, user = prompts.generation_messages(question=QUESTION, background=BACKGROUND)
    assert system == GENERATION_SYSTEM
    assert user == f"TASK\nResearch background: {BACKGROUND}\n\nResearch question: {QUESTION}\n\n{GENERATION_TAIL}"


def test_generation_prompt_without_background_leaves_out_its_line_and_blank_line():
    system, user = prompts.generation_messages(question=QUESTION, background="")
    assert system == GENERATION_SYSTEM
    assert user == f"TASK\nResearch question: {QUESTION}\n\n{GENERATION_TAIL}"
    assert "Research background" not in user


def test_generation_prompt_for_five_differs_only_in_the_count():
    _, ten = prompts.generation_messages(question=QUESTION)
    _, five = prompts.generation_messages(question=QUESTION, count=5)
    assert "Propose ten hypotheses.\n" in ten and "Propose five hypotheses.\n" in five
    assert five == ten.replace("Propose ten hypotheses.", "Propose five hypotheses.")


def test_forecast_prompt_with_background_is_exactly_the_spec_text():
    system, user = prompts.forecast_messages(question=QUESTION, background=BACKGROUND, items=ITEMS, grok=False)
    assert system == "Return a JSON object."
    assert user == (
        "For each hypothesis below, will it be confirmed experimentally?\n"
        "\n"
        "BACKGROUND\n"
        f"{BACKGROUND}\n"
        "\n"
        "RESEARCH QUESTION\n"
        f"{QUESTION}\n"
        "\n"
        "HYPOTHESES\n"
        "[H1] Text one. Mechanism: m1 Prediction: p1\n"
        "\n"
        "[H2] Text two. Mechanism: m2 Prediction: p2\n"
        "\n"
        f"{REMINDER}"
    )


def test_forecast_prompt_without_background_leaves_out_the_background_block():
    system, user = prompts.forecast_messages(question=QUESTION, background="", items=ITEMS, grok=False)
    assert system == "Return a JSON object."
    assert user == (
        "For each hypothesis below, will it be confirmed experimentally?\n"
        "\n"
        "RESEARCH QUESTION\n"
        f"{QUESTION}\n"
        "\n"
        "HYPOTHESES\n"
        "[H1] Text one. Mechanism: m1 Prediction: p1\n"
        "\n"
        "[H2] Text two. Mechanism: m2 Prediction: p2\n"
        "\n"
        f"{REMINDER}"
    )


def test_grok_gets_the_suffix_on_both_messages_and_the_reminder_repeated():
    plain_system, plain_user = prompts.forecast_messages(
        question=QUESTION, background=BACKGROUND, items=ITEMS, grok=False
    )
    system, user = prompts.forecast_messages(question=QUESTION, background=BACKGROUND, items=ITEMS, grok=True)
    assert system == f"Return a JSON object.\n\n{GROK}"
    assert user == f"{plain_user}\n\n{GROK}\n\n{REMINDER}"
    assert user.endswith(REMINDER) and user.count(REMINDER) == 2


def test_hypothesis_text_joins_the_three_parts_as_the_seed_says():
    text = prompts.hypothesis_text("NAD+ decline drives clone expansion.", "Less SIRT activity.", "NR slows it.")
    assert text == "NAD+ decline drives clone expansion. Mechanism: Less SIRT activity. Prediction: NR slows it."


def test_detailed_instruction_follows_seed_001_b1():
    system, user = prompts.detailed_forecast_messages(question=QUESTION, background=BACKGROUND, items=ITEMS)
    assert system.startswith("You advise researchers which causal hypotheses deserve experimental testing")
    assert system.endswith("Return a complete JSON object in this reply.")
    assert user.startswith(f"BACKGROUND\n{BACKGROUND}\n\nRESEARCH QUESTION\n{QUESTION}\n\nCANDIDATE HYPOTHESES\n[H1] ")
    assert "\n\n[H2] Text two. Mechanism: m2 Prediction: p2\n\nAssess EVERY hypothesis independently." in user
    assert user.endswith('"supports_if":"...","refutes_if":"..."}}]}')
    _, without = prompts.detailed_forecast_messages(question=QUESTION, background="", items=ITEMS)
    assert without.startswith(f"RESEARCH QUESTION\n{QUESTION}\n\nCANDIDATE HYPOTHESES\n")


def test_single_hypothesis_question_follows_seed_001_b3():
    system, user = prompts.single_hypothesis_messages(label="H7", text="Text seven.")
    assert system == "Return a JSON object."
    assert user == (
        "Will this hypothesis be confirmed experimentally?\n\nHYPOTHESIS\n[H7] Text seven.\n\n"
        'Return a JSON object with a "forecasts" array containing this hypothesis\'s "id" and a boolean "confirmed".'
    )


def test_the_single_hypothesis_question_carries_the_protocols_twelve_digit_id():
    assert prompts.single_hypothesis_id("H7") == "H000000000007"
    assert prompts.single_hypothesis_id("H1234") == "H000000001234"
    _, user = prompts.single_hypothesis_messages(label=prompts.single_hypothesis_id("H1"), text="Text one.")
    assert "HYPOTHESIS\n[H000000000001] Text one.\n" in user


def test_translation_request_carries_every_hypothesis_and_asks_for_russian():
    items = [{"id": "H1", "statement": "S «1»", "mechanism": "M", "prediction": "P"}]
    system, user = prompts.translation_messages(items=items)
    assert "Russian" in system and "Russian" in user
    assert '"statement": "S «1»"' in user
