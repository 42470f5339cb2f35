"""The literature novelty check (SPEC §5): the gate before any model call, the judge's verdict and its verbatim quote,
every cause of `unresolved`, the parts of a hypothesis, and checks of proposals on demand. The judge is a scripted
OpenAI-compatible server on 127.0.0.1."""

import hashlib
import json
import re
import time
from datetime import date

import pytest
from rest_framework.test import APIClient

from literature import novelty, retrieval, verdicts
from literature.models import NoveltyCheck, Reference
from literature.tasks import novelty_check_task
from literature.verdicts import JudgementUnreadable, Part, hypothesis_parts, parse_judgement, quote_occurs
from screening.llm.models import ModelCall, ModelEndpoint
from tests import factories
from tests.api_schema_support import api_schema, assert_conforms

JUDGE = "novelty-judge"
HYPOTHESIS = (
    "In aged mice, CD38 expressed by senescent macrophages lowers NAD+ in visceral adipose tissue. "
    "Mechanism: SASP factors induce CD38 on tissue macrophages, which degrade NMN. "
    "Prediction: CD38 blockade restores NAD+ levels in old adipose tissue."
)
REPORTING_TITLE = "CD38 on senescent macrophages and NAD+ in ageing fat"
REPORTING_SENTENCE = "In aged mice, CD38 expressed by senescent macrophages lowered NAD+ in visceral adipose tissue."

pytestmark = pytest.mark.usefixtures("fast_retries")


@pytest.fixture
def judge(db, server):
    return ModelEndpoint.objects.create(
        display_name="Novelty judge",
        company="Test",
        protocol=ModelEndpoint.Protocol.OPENAI,
        base_url=server.base_url,
        model_id=JUDGE,
        timeout_seconds=1,
    )


def make_reference(title: str, abstract: str, published=date(2020, 1, 1)) -> Reference:
    return Reference.objects.create(
        source=Reference.Source.PUBMED,
        source_id=hashlib.sha256(title.encode()).hexdigest()[:8],
        pmid=str(int(hashlib.sha256(title.encode()).hexdigest()[:6], 16)),
        title=title,
        abstract=abstract,
        published=published,
        published_precision="day",
        content_sha256=hashlib.sha256((title + abstract).encode()).hexdigest(),
    )


@pytest.fixture
def corpus(db):
    reporting = make_reference(
        REPORTING_TITLE,
        f"Senescent cells accumulate in fat with age.\n{REPORTING_SENTENCE}   Blocking CD38\n  restored NAD+ "
        "levels in old animals.",
    )
    make_reference(
        "Macrophages in visceral adipose tissue of aged mice",
        "Visceral adipose tissue of aged mice holds more inflammatory macrophages than that of young mice.",
    )
    make_reference("NAD+ in visceral fat", "NAD+ falls in visceral adipose tissue with age.")
    make_reference("Telomeres in zebrafish fins", "Fin regeneration in zebrafish depends on telomerase.")
    return reporting


def respond(script, reply):
    """The judge answers reply(user message) to every request: a text, or (status, body) for an HTTP error."""
    script.forecast[JUDGE] = lambda items, attempt: reply(script.requests_of(JUDGE, "forecast")[-1])


def label_of(user: str, title: str) -> str:
    return re.search(r"^\[(R\d+)\] \(\d{4}\) " + re.escape(title), user, re.MULTILINE).group(1)


def judged(verdict: str, quote: str = "", reference_id: str = "", **extra) -> str:
    return json.dumps({"verdict": verdict, "quote": quote, "reference_id": reference_id, "reason": "Why.", **extra})


# The gate comes first --------------------------------------------------------------------------------------------


def test_no_candidate_passing_the_gate_is_not_reported_without_a_model_call(judge, script):
    make_reference("Telomeres in zebrafish fins", "Fin regeneration in zebrafish depends on telomerase in aged fish.")
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge)
    assert (result.verdict, result.reason, result.unsupported) == (
        "not_reported",
        "no candidate passed the lexical gate",
        False,
    )
    assert result.candidates == [] and result.model_call_id is None
    assert not ModelCall.objects.exists() and script.requests == []


def test_a_candidate_sharing_two_terms_is_gated_out(judge, script):
    # "aged" and "mice" are shared; nothing else is.
    make_reference("Hair greying", "Hair greying in aged mice follows melanocyte stem cell loss.")
    assert novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge).verdict == "not_reported"
    assert script.requests == []


def test_cutoff_limits_the_check_to_earlier_references(judge, script, corpus):
    Reference.objects.exclude(pk=corpus.pk).delete()
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge, published_before=date(2020, 1, 1))
    assert result.verdict == "not_reported" and script.requests == []


# Verdicts with verbatim quotes -----------------------------------------------------------------------------------


def test_reported_with_a_verbatim_quote_cites_its_reference(judge, script, corpus):
    respond(script, lambda user: judged("reported", REPORTING_SENTENCE, label_of(user, REPORTING_TITLE)))
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge)
    assert (result.verdict, result.evidence, result.unsupported) == ("reported", REPORTING_SENTENCE, False)
    assert result.reference == {
        "source": "pubmed",
        "id": corpus.source_id,
        "title": REPORTING_TITLE,
        "year": 2020,
        "link": f"https://pubmed.ncbi.nlm.nih.gov/{corpus.pmid}/",
    }
    call = ModelCall.objects.get()
    assert (call.purpose, call.pk, call.endpoint_id) == ("novelty", result.model_call_id, judge.pk)
    (user,) = script.requests_of(JUDGE, "forecast")
    assert "In aged mice, CD38 expressed by senescent macrophages lowers NAD+" in user
    assert "Telomeres in zebrafish" not in user


def test_a_quote_matching_after_whitespace_normalisation_is_verbatim(judge, script, corpus):
    quote = "Blocking CD38 restored NAD+ levels in old animals."  # the abstract breaks this line and doubles spaces
    assert quote not in corpus.abstract
    respond(script, lambda user: judged("contradicted", f"“{quote}”", f"[{label_of(user, REPORTING_TITLE)}]"))
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge)
    assert (result.verdict, result.evidence, result.unsupported) == ("contradicted", quote, False)


def test_a_fabricated_quote_is_unsupported_and_unresolved(judge, script, corpus):
    fabricated = "CD38 on senescent macrophages is the sole cause of NAD+ decline in aged fat."
    respond(script, lambda user: judged("reported", fabricated, label_of(user, REPORTING_TITLE)))
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge)
    assert (result.verdict, result.unsupported, result.judged_verdict) == ("unresolved", True, "reported")
    assert "does not occur" in result.reason and fabricated in result.reason and "Why." in result.reason
    assert result.evidence == "" and result.reference is None


def test_a_quote_from_a_reference_that_was_not_supplied_is_unsupported(judge, script, corpus):
    respond(script, lambda user: judged("reported", REPORTING_SENTENCE, "R9"))
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge)
    assert (result.verdict, result.unsupported) == ("unresolved", True)
    assert "R9, which was not among the references supplied" in result.reason


def test_the_judges_not_reported_needs_no_quote(judge, script, corpus):
    respond(script, lambda user: judged("not_reported"))
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge)
    assert (result.verdict, result.evidence, result.reference, result.reason) == ("not_reported", "", None, "Why.")
    assert result.model_call_id is not None


def test_components_reported_keeps_the_evidence_of_each_part(judge, script, corpus):
    cause_quote = "Visceral adipose tissue of aged mice holds more inflammatory macrophages than that of young mice."
    effect_quote = "NAD+ falls in visceral adipose tissue with age."
    # Twelve rarer terms in the mechanism fill the whole hypothesis's query: only the parts' own retrieval finds
    # the references on the cause and on the effect.
    signals = [f"Signal{n}" for n in range(12)]
    for signal in signals:
        make_reference(f"{signal} in yeast", f"{signal} is a kinase of budding yeast.")
    hypothesis = HYPOTHESIS.replace("which degrade NMN", "through " + ", ".join(signals))

    def reply(user):
        components = [
            {"part": "cause", "quote": cause_quote, "reference_id": label_of(user, "Macrophages in visceral")},
            {"part": "effect", "quote": effect_quote, "reference_id": label_of(user, "NAD+ in visceral fat")},
        ]
        return judged("components_reported", components=components)

    respond(script, reply)
    result = novelty.novelty_check(hypothesis_text=hypothesis, endpoint=judge)
    assert result.verdict == "components_reported" and not result.unsupported
    assert [(c.part, c.evidence, c.citation["title"]) for c in result.components] == [
        ("cause", cause_quote, "Macrophages in visceral adipose tissue of aged mice"),
        ("effect", effect_quote, "NAD+ in visceral fat"),
    ]
    assert cause_quote in result.evidence and effect_quote in result.evidence
    assert result.reference["title"] == "Macrophages in visceral adipose tissue of aged mice"
    retrieved_for = {r.candidate.title: r.retrieved_for for r in result.candidates}
    assert retrieved_for["Macrophages in visceral adipose tissue of aged mice"] == "cause"
    assert retrieved_for["NAD+ in visceral fat"] == "effect"
    (user,) = script.requests_of(JUDGE, "forecast")
    assert "[cause] In aged mice, CD38 expressed by senescent macrophages\n" in user
    assert "[effect] lowers NAD+ in visceral adipose tissue.\n" in user


def test_a_proposal_checks_answer_matches_its_schema_pending_and_with_components(
    judge, script, corpus, analyst, settings, django_capture_on_commit_callbacks, django_db_blocker
):
    with django_db_blocker.unblock():
        schema = api_schema()
    cause_quote = "Visceral adipose tissue of aged mice holds more inflammatory macrophages than that of young mice."
    effect_quote = "NAD+ falls in visceral adipose tissue with age."

    def reply(user):
        components = [
            {"part": "cause", "quote": cause_quote, "reference_id": label_of(user, "Macrophages in visceral")},
            {"part": "effect", "quote": effect_quote, "reference_id": label_of(user, "NAD+ in visceral fat")},
        ]
        return judged("components_reported", components=components)

    respond(script, reply)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    proposal = factories.make_proposal(statement=HYPOTHESIS)
    with django_capture_on_commit_callbacks(execute=False):  # the worker's turn comes below
        check = novelty.proposal_novelty_check_request(proposal=proposal, endpoint=judge)
    api = APIClient()
    api.force_authenticate(analyst)
    url = f"/api/v1/literature/checks/{check.pk}"
    pending = api.get(url).json()
    assert (pending["state"], pending["reference"], pending["components"]) == ("pending", None, [])
    assert_conforms(schema, "/api/v1/literature/checks/{check_id}", pending)

    novelty.novelty_check_perform(check_id=check.pk)
    done = api.get(url).json()
    assert (done["state"], done["verdict"]) == ("done", "components_reported")
    assert [(c["part"], c["evidence"]) for c in done["components"]] == [
        ("cause", cause_quote),
        ("effect", effect_quote),
    ]
    assert done["reference"]["title"] == "Macrophages in visceral adipose tissue of aged mice"
    assert_conforms(schema, "/api/v1/literature/checks/{check_id}", done)


def test_components_reported_without_a_quote_for_every_part_is_unsupported(judge, script, corpus):
    cause = {"part": "cause", "quote": REPORTING_SENTENCE, "reference_id": "R1"}
    respond(script, lambda user: judged("components_reported", components=[cause]))
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge)
    assert (result.verdict, result.unsupported, result.judged_verdict) == ("unresolved", True, "components_reported")
    assert "the effect part has no quote" in result.reason


# Every cause of unresolved ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, reason",
    [
        (lambda user: (400, {"error": {"message": "model not found"}}), "HTTP 400: model not found"),
        (lambda user: (503, {"error": {"message": "overloaded"}}), "gave up after 2 attempts"),
        (lambda user: time.sleep(1.5) or judged("not_reported"), "timed out"),
        (lambda user: "The hypothesis looks new to me.", "could not be read: the reply holds no JSON object"),
        (lambda user: judged("novel"), "the verdict 'novel' is not one of"),
        (lambda user: '{"verdict": "reported", "verdict": "not_reported"}', "repeats the key 'verdict'"),
    ],
    ids=["http-error", "retries-exhausted", "timeout", "not-json", "unknown-verdict", "duplicate-key"],
)
def test_every_failure_is_unresolved_with_its_reason_never_not_reported(judge, script, corpus, reply, reason):
    respond(script, reply)
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=judge)
    assert result.verdict == "unresolved" and not result.unsupported
    assert reason in result.reason
    assert ModelCall.objects.filter(purpose="novelty").exists()


def test_without_a_judge_a_check_with_candidates_is_unresolved(db, corpus):
    result = novelty.novelty_check(hypothesis_text=HYPOTHESIS, endpoint=None)
    assert (result.verdict, result.reason) == ("unresolved", "no literature judge is configured")
    assert result.candidates and not ModelCall.objects.exists()


# What the judge reads ---------------------------------------------------------------------------------------------


def test_the_judge_reads_negations_and_at_most_2500_characters_of_a_reference(judge, script, corpus):
    Reference.objects.filter(pk=corpus.pk).update(abstract=corpus.abstract + " Late sentence." + " tail" * 600)
    respond(script, lambda user: judged("not_reported"))
    negated = HYPOTHESIS.replace("lowers NAD+", "does not lower NAD+ without IL-6")
    novelty.novelty_check(hypothesis_text=negated, endpoint=judge)
    (user,) = script.requests_of(JUDGE, "forecast")
    assert "does not lower NAD+ without IL-6" in user
    line = next(line for line in user.splitlines() if REPORTING_TITLE in line)
    assert "Late sentence." in line and len(line) < 2600 and "tail" * 10 not in line.replace(" ", "")[2600:]
    assert "reported" in user and "contradicted" in user and "components_reported" in user and "verbatim" in user


# Parsing and quotes -------------------------------------------------------------------------------------------------


def test_verdict_parsing_reads_fenced_json_labels_and_quote_marks():
    fields = '"verdict": "Reported", "quote": "\\"A b c.\\"", "reference_id": "[r2]", "reason": "x"'
    reply = "Here it is:\n```json\n{" + fields + "}\n```"
    judgement = parse_judgement(reply)
    assert (judgement.verdict, judgement.quoted.label, judgement.quoted.quote) == ("reported", "R2", '"A b c."')
    assert verdicts.clean_quote(judgement.quoted.quote) == "A b c."
    assert parse_judgement(judged("components reported")).verdict == "components_reported"
    for unreadable in ("[1, 2]", "{}", '{"verdict": 3}', judged("reported", components="none"), None):
        with pytest.raises(JudgementUnreadable):
            parse_judgement(unreadable)


def test_quote_verification_is_exact_or_whitespace_normalised():
    text = "Title\nSenescent cells  accumulate\nin fat with age. NAD+ falls."
    assert quote_occurs("NAD+ falls.", text) is False  # too short to be a passage
    assert quote_occurs("Senescent cells  accumulate\nin fat", text)
    assert quote_occurs("Senescent cells accumulate in fat with age.", text)
    assert quote_occurs("“Senescent cells accumulate in fat with age.”", text)
    assert not quote_occurs("Senescent cells accumulate in fat with AGE.", text)
    assert not quote_occurs("Senescent cells accumulate in fat ... age.", text)


# Parts -------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement, parts",
    [
        (
            "In aged mice, senolytic clearance of p16-positive cells in the bone-marrow niche slows the expansion "
            "of mutant clones.",
            ["In aged mice, senolytic clearance of p16-positive cells in the bone-marrow niche",
             "slows the expansion of mutant clones."],
        ),
        (
            "Reduced NAD+ levels in aged muscle impair mitochondrial function. A second sentence.",
            ["Reduced NAD+ levels in aged muscle", "impair mitochondrial function."],
        ),
        (
            "In old hearts, spermidine-induced autophagy would restore diastolic function.",
            ["In old hearts, spermidine-induced autophagy", "restore diastolic function."],
        ),
        (
            "An increase in marrow fat leads to clonal haematopoiesis.",
            ["An increase in marrow fat", "leads to clonal haematopoiesis."],
        ),
    ],
)  # fmt: skip
def test_a_statement_splits_into_cause_and_effect_at_its_first_causal_verb(statement, parts):
    assert hypothesis_parts(f"{statement} Mechanism: m. Prediction: p.") == [
        Part("cause", parts[0]),
        Part("effect", parts[1]),
    ]


def test_a_statement_without_a_causal_verb_has_statement_and_mechanism_parts():
    text = "Frailty is the systemic expression of senescence. Mechanism: SASP proteins. Prediction: p."
    assert hypothesis_parts(text) == [
        Part("statement", "Frailty is the systemic expression of senescence."),
        Part("mechanism", "SASP proteins."),
    ]


# Checks of proposals on demand ------------------------------------------------------------------------------------


def test_a_proposal_is_checked_on_demand_with_its_tasks_cutoff(
    judge, script, corpus, django_capture_on_commit_callbacks
):
    task = factories.make_task(published=date(2021, 6, 1))
    proposal = factories.make_proposal(task=task, statement=HYPOTHESIS.split(" Mechanism: ")[0])
    respond(script, lambda user: judged("reported", REPORTING_SENTENCE, label_of(user, REPORTING_TITLE)))
    with django_capture_on_commit_callbacks() as callbacks:
        check = novelty.proposal_novelty_check_request(proposal=proposal, endpoint=judge)
    assert (check.state, check.published_before, len(callbacks)) == ("pending", date(2021, 6, 1), 1)
    novelty_check_task.apply(args=[check.pk])
    check.refresh_from_db()
    assert (check.state, check.verdict, check.evidence, check.reference_id) == (
        "done", "reported", REPORTING_SENTENCE, corpus.pk,
    )  # fmt: skip
    assert check.citation["title"] == REPORTING_TITLE and check.model_call.purpose == "novelty"
    assert {c["title"] for c in check.candidates} >= {REPORTING_TITLE}
    # A redelivered task changes nothing.
    novelty_check_task.apply(args=[check.pk])
    assert ModelCall.objects.count() == 1 and NoveltyCheck.objects.get().verdict == "reported"


def test_a_proposal_check_before_the_literature_existed_is_not_reported(judge, script, corpus):
    proposal = factories.make_proposal(task=factories.make_task(published=date(2019, 6, 1)), statement=HYPOTHESIS)
    check = novelty.proposal_novelty_check_request(proposal=proposal, endpoint=judge)
    novelty.novelty_check_perform(check_id=check.pk)
    check.refresh_from_db()
    assert (check.verdict, check.reason, check.model_call) == ("not_reported", novelty.NO_CANDIDATE_REASON, None)
    assert retrieval.search(HYPOTHESIS, limit=5)  # without the cutoff there are candidates
