"""Builders for inspiration-audit tests: references, a judge on the scripted model server, cutoffs."""

import hashlib
import json
from datetime import date

from literature.models import Reference
from reviewapp.inspiration.services import cutoff_set
from screening.llm.models import ModelEndpoint, Roster, RosterMember
from tests import factories


def make_reference(source_id: str, title: str, abstract: str, published: date | None, precision: str = "day"):
    return Reference.objects.create(
        source="csv",
        source_id=source_id,
        title=title,
        abstract=abstract,
        published=published,
        published_precision=precision if published else "",
        content_sha256=hashlib.sha256(f"{source_id}{title}{abstract}".encode()).hexdigest(),
    )


def add_inspiration_judge(base_url: str, *, model_id: str = "judge-luna", simulated: bool = False) -> ModelEndpoint:
    """An OpenAI-compatible endpoint at base_url as the default roster's inspiration judge (a roster is made when
    there is no default one)."""
    roster = Roster.objects.filter(is_default=True).first() or Roster.objects.create(
        name="Audit roster", is_default=True
    )
    endpoint, _ = ModelEndpoint.objects.get_or_create(
        display_name=f"Model {model_id}",
        defaults={
            "company": "Judges Inc",
            "protocol": ModelEndpoint.Protocol.OPENAI,
            "base_url": base_url,
            "model_id": model_id,
            "is_simulated": simulated,
            "timeout_seconds": 10,
        },
    )
    RosterMember.objects.create(roster=roster, role=RosterMember.Role.INSPIRATION_JUDGE, endpoint=endpoint)
    return endpoint


# Two groups: A with a day cutoff, B with a month cutoff (later literature from 2026-06-01).
A, B = "Model A", "Model B"
SENESCENCE, METABOLISM = "senescence", "metabolism"
R1_QUOTE = "We measured tranvide after velqorin dosing in drumlet explants."


def hand_counted_cohort():
    """Seven versions, each about its own made-up terms, and the references that decide their outcomes (the audit
    test counts them by hand)."""
    specs = [
        # id, group, domain, statement
        ("P1", A, SENESCENCE, "Velqorin lowers tranvide within drumlet."),
        ("P2", A, SENESCENCE, "Velqorin lowers tranvide within drumlet."),  # the same text: the same input as P1
        ("P3", A, METABOLISM, "Orquelin raises bastemide across fennoid."),
        ("P4", B, METABOLISM, "Pandrel softens quimbase beside lorvath."),
        ("P5", B, SENESCENCE, "Zorblax tightens quintavine via morrowel."),
        ("P6", B, SENESCENCE, "Crindle warps yastrope inside helvane."),
        ("P7", B, METABOLISM, "Dovrane spurs oxilate beside ternwick."),
    ]
    proposals = [
        factories.make_proposal(external_id=ident, author=group, domain_category=domain, statement=statement)
        for ident, group, domain, statement in specs
    ]
    # P1/P2: later for A, shares velqorin, tranvide, drumlet (three terms).
    make_reference(
        "r1", "Velqorin and tranvide in drumlet", f"{R1_QUOTE} Littermates served as controls.", date(2026, 6, 10)
    )
    # P3: only on A's cutoff day and in A's cutoff month (too coarse): nothing later.
    make_reference("r2", "Orquelin bastemide fennoid", "Orquelin bastemide fennoid.", date(2026, 5, 14))
    make_reference("r2b", "Orquelin bastemide fennoid review", "Orquelin bastemide fennoid.", date(2026, 5, 1), "month")
    # P4: the last day of B's cutoff month is not later; the first day after is.
    make_reference("r3", "Pandrel quimbase lorvath softens", "Pandrel softens quimbase lorvath.", date(2026, 5, 31))
    make_reference(
        "r4",
        "Pandrel quimbase lorvath",
        "Pandrel was compared with vehicle in quimbase lorvath assays.",
        date(2026, 6, 1),
    )
    # P5: later (the whole year 2027) but shares two terms only.
    make_reference("r5", "Zorblax notes", "Quintavine was absent.", date(2027, 1, 1), "year")
    # P6: later (September 2026), exactly three shared terms.
    make_reference(
        "r6", "Crindle yastrope", "Helvane crindle yastrope samples were sequenced.", date(2026, 9, 1), "month"
    )
    # P7: later, judged negative.
    make_reference("r7", "Dovrane oxilate ternwick", "Dovrane oxilate ternwick.", date(2026, 7, 2))
    # Dated by the year 2026 only: too coarse for both groups.
    make_reference("r8", "Gossamer unrelated", "Nothing shared here.", date(2026, 1, 1), "year")
    cutoff_set(group=A, cutoff="2026-05-14")
    cutoff_set(group=B, cutoff="2026-05")
    return factories.make_cohort(proposals, name="Audit cohort")


def scripted_judge(user: str, attempt: int):
    text = user.lower()
    if "velqorin" in text:
        return json.dumps({"judgment": "positive", "connection": "measurement", "quote": R1_QUOTE, "reason": "r1"})
    if "pandrel" in text:  # a quote that is not in the publication
        quote = "Pandrel reduced quimbase in every lorvath."
        return json.dumps({"judgment": "positive", "connection": "comparator", "quote": quote, "reason": "r4"})
    if "crindle" in text:
        return "I would rather not say."  # never parses, asked twice
    return json.dumps({"judgment": "negative", "connection": "", "quote": "", "reason": "no connection"})
