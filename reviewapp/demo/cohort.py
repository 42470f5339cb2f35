"""The demonstration cohort that `make run` loads: research tasks and proposals in the biology of ageing,
written by hand for the demo (not research data), demo accounts for each role, and the cohort's reviews.

Loading is idempotent: the accounts, the cohort, its proposals, conflicts, assignments and reviews are created once;
only the demo passwords change on every load, so no password outlives the run that printed it.
"""

import hashlib
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone

from literature.demo import demo_references_load
from reviewapp import protocol
from reviewapp.core.roles import ANALYST, COORDINATOR, REVIEWER
from reviewapp.inspiration.models import InspirationCutoff
from reviewapp.inspiration.services import cutoff_set
from reviewapp.models import Assignment, Cohort, Conflict
from reviewapp.panel.models import FamilyMember
from reviewapp.panel.services.families import families_group, family_record
from reviewapp.selectors.packets import SECTION_LABELS
from reviewapp.services.accounts import tokens_revoke_all
from reviewapp.services.cohorts import cohort_assign, cohort_create, conflict_declare
from reviewapp.services.imports import cohort_import_file
from reviewapp.services.reviews import review_save, review_submit

DEMO_COHORT_FILE = Path(__file__).with_name("demo_cohort.json")
DEMO_COHORT_NAME = "Demo: biology of ageing (demonstration data)"
DEMO_COHORT_DESCRIPTION = (
    "Research tasks and proposals written by hand for demonstrating the product. They are not research data "
    "and do not describe real studies."
)
DEMO_DATASET = "Demo data (written for demonstration)"
DEMO_REVIEWERS_PER_PROPOSAL = 2
DEMO_SEED = 2026
DEMO_COORDINATOR = "demo-coordinator"
DEMO_REVIEWERS = ("demo-reviewer-1", "demo-reviewer-2", "demo-reviewer-3")
DEMO_ACCOUNTS = (
    (DEMO_COORDINATOR, COORDINATOR),
    ("demo-analyst", ANALYST),
    *((username, REVIEWER) for username in DEMO_REVIEWERS),
)

# demo-reviewer-1's first proposal gets this submitted review, the second a draft, so progress pages show both; the
# demo leaves the rest of their queue half done (DEMO_FIRST_REVIEWER_SUBMITS more submitted, the others to do).
DEMO_FIRST_REVIEWER_SUBMITS = 10
_SUBMITTED_ANSWERS = {
    "overall": 3,
    "recommendation": "revise",
    **dict.fromkeys(protocol.CRITERION_FIELDS, "3"),
    "data_fit": "2",
    "alternative_explanations": protocol.CANT_JUDGE,
    "flaw_verdict": "fixable",
    "flaw_checklist": ["confounding", "power"],
    "main_flaw": "The named data cannot separate the proposed cause from age-related confounders.",
    "comments": "Demo review, written for the demonstration.",
}
_DRAFT_ANSWERS = {"overall": 4, "recommendation": "prioritize"}
# Cutoffs for the demo cohort's authors, so that an inspiration audit of it finds later demo references. Illustrative
# dates, not the models' real cutoffs.
DEMO_CUTOFFS = {
    "GPT-6 Astra": "2021-06-30",
    "Grok 4.5": "2020-12",
    "Claude Opus 5.5": "2021-03",
    "Gemini 4 Argon": "2020-06",
    "Demo researcher": "2019-12",
}
DEMO_CUTOFF_NOTE = "demo cutoff (illustrative, not the model's)"


@dataclass(frozen=True)
class DemoLogin:
    username: str
    role: str
    password: str


@dataclass(frozen=True)
class DemoLoad:
    cohort: Cohort
    cohort_created: bool
    logins: list[DemoLogin]


def _demo_account(*, username: str, role: str, password_hash: str) -> User:
    """Create or update a demo account with exactly its role and a fresh password (only the hash is stored)."""
    account, _ = User.objects.get_or_create(username=username)
    account.password = password_hash
    account.is_active = True
    account.save()
    account.groups.set([Group.objects.get(name=role)])
    tokens_revoke_all(owner=account)  # tokens made with an earlier demo password end with it
    return account


def _fresh_passwords(count: int) -> list[tuple[str, str]]:
    """(password, hash) pairs. Hashing is deliberately slow and releases the GIL, so the hashes are made side by side:
    a second `make run` waits for one hash, not five."""
    passwords = [secrets.token_urlsafe(9) for _ in range(count)]
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(zip(passwords, pool.map(make_password, passwords), strict=True))


# What the demo coordinator records of two contribution families (demonstration text, like the rest of the demo): one
# diagnostically examined (it carries evidence), one only source-grounded.
DEMO_FAMILY_RECORDS = {
    "demo-p05": {
        "question": "Does the ageing niche select DNMT3A-mutant clones through inflammatory signalling?",
        "increment": "Demonstration: a revised design with a negative-control cohort beyond the starting evidence.",
        "status": "inconclusive",
        "maturity": "diagnostically_examined",
        "evidence": "Demonstration: the readiness check failed on data access; the diagnostic rerun was inconclusive.",
    },
    "demo-p36": {
        "question": "Does a combined inflammatory and metabolic signal explain the crossover's prediction?",
        "increment": "Demonstration: joins two directions of the same task.",
        "maturity": "source_grounded",
    },
}


def _seed_families(cohort: Cohort, coordinator: User) -> None:
    families_group(cohort=cohort)
    for proposal_id, values in DEMO_FAMILY_RECORDS.items():
        member = FamilyMember.objects.select_related("family").get(cohort=cohort, proposal__external_id=proposal_id)
        family_record(cohort=cohort, family=member.family, values=values, user=coordinator)


def _seed_conflicts(cohort: Cohort, accounts: dict[str, User], coordinator: User) -> None:
    """Two declared conflicts of interest (written for the demo), declared before assigning, so the assignment
    leaves those reviewers off those proposals and the People page lists them."""
    proposals = list(cohort.proposals.order_by("external_id")[:2])
    for reviewer, proposal, kind in zip(
        (DEMO_REVIEWERS[1], DEMO_REVIEWERS[2]),
        proposals,
        (Conflict.Kind.COLLABORATOR, Conflict.Kind.INSTITUTIONAL),
        strict=False,
    ):
        conflict_declare(
            reviewer=accounts[reviewer],
            kind=kind,
            proposal=proposal,
            note="Demo conflict, written for the demonstration.",
            user=coordinator,
        )


def _seed_reviews(cohort: Cohort, reviewer: User) -> None:
    """The first demo reviewer's queue: the first review submitted, the second a draft, then DEMO_FIRST_REVIEWER_SUBMITS
    more submitted; the rest is theirs to do."""
    assignments = list(
        Assignment.objects.select_related("cohort", "proposal", "reviewer")
        .filter(cohort=cohort, reviewer=reviewer)
        .order_by("position")
    )
    first, second, *rest = assignments
    # A page opened a few minutes before each save gives the progress page a time per review.
    opened_at = timezone.now() - timedelta(minutes=4)
    review_submit(assignment=first, reviewer=reviewer, answers=_SUBMITTED_ANSWERS, version=0, opened_at=opened_at)
    review_save(assignment=second, reviewer=reviewer, answers=_DRAFT_ANSWERS, version=0, opened_at=opened_at)
    for assignment in rest[:DEMO_FIRST_REVIEWER_SUBMITS]:
        review_submit(
            assignment=assignment, reviewer=reviewer, answers=_demo_answers(assignment), version=0, opened_at=opened_at
        )


def _fraction(*parts: str) -> float:
    return int(hashlib.sha256(":".join(parts).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _point(quality: float, noise: float, top: int) -> int:
    """A point of a 1–top scale for a quality in 0–1 shifted by noise."""
    return 1 + round((top - 1) * min(1.0, max(0.0, quality + noise)))


def _demo_answers(assignment: Assignment) -> dict:
    """A demonstration review: fuller proposals tend to get better answers; a hash of the proposal sets its quality,
    one of reviewer and proposal adds each reviewer's noise (so reviewers agree more than by chance, not fully), and
    some answers are "can't judge" (written for the demo, not anyone's judgement)."""
    proposal = assignment.proposal
    key = f"{assignment.reviewer.username}:{proposal.external_id}"
    sections = sum(bool(getattr(proposal, name)) for name, _ in SECTION_LABELS)
    shared = 0.6 * _fraction("quality", proposal.external_id)
    quality = min(1.0, 0.04 * sections + shared + 0.25 * _fraction("quality", key))
    overall = _point(quality, 0.0, 5)
    criteria = {
        field: protocol.CANT_JUDGE
        if _fraction(field, key) < 0.08
        else str(_point(quality, _fraction(key, field) * 0.3 - 0.15, 4))
        for field in protocol.CRITERION_FIELDS
    }
    recommendation = {5: "prioritize", 4: "revise", 3: "revise", 2: "defer", 1: "reject"}[overall]
    return {
        "overall": overall,
        "recommendation": recommendation,
        **criteria,
        "flaw_verdict": "absent" if quality > 0.7 else "fixable" if quality > 0.35 else "fatal",
        "comments": "Demo review, written for the demonstration.",
    }


def _seed_calibration_reviews(cohort: Cohort, reviewers: list[User]) -> None:
    """The other demo reviewers have submitted all their reviews, so the AI panel's calibration has human reviews
    to compare with (every proposal has one of these two reviewers)."""
    opened_at = timezone.now() - timedelta(minutes=6)
    assignments = Assignment.objects.filter(cohort=cohort, reviewer__in=reviewers).select_related(
        "proposal", "reviewer"
    )
    for assignment in assignments.order_by("reviewer_id", "position"):
        review_submit(
            assignment=assignment,
            reviewer=assignment.reviewer,
            answers=_demo_answers(assignment),
            version=0,
            opened_at=opened_at,
        )


@transaction.atomic
def demo_load() -> DemoLoad:
    """Ensure the demo accounts (new passwords every time), the demo cohort, its proposals and assignments."""
    accounts, logins = {}, []
    for (username, role), (password, password_hash) in zip(
        DEMO_ACCOUNTS, _fresh_passwords(len(DEMO_ACCOUNTS)), strict=True
    ):
        accounts[username] = _demo_account(username=username, role=role, password_hash=password_hash)
        logins.append(DemoLogin(username=username, role=role, password=password))
    coordinator = accounts[DEMO_COORDINATOR]

    cohort = Cohort.objects.filter(name=DEMO_COHORT_NAME).first()
    cohort_created = cohort is None
    if cohort_created:
        cohort = cohort_create(
            name=DEMO_COHORT_NAME,
            description=DEMO_COHORT_DESCRIPTION,
            reviewers_per_proposal=DEMO_REVIEWERS_PER_PROPOSAL,
            seed=DEMO_SEED,
            is_demo=True,
            user=coordinator,
        )
    # Assigning opens the cohort, so a demo cohort that is no longer a draft was loaded before; later
    # changes to it (reassignments, closing) are the coordinator's and are left alone.
    if cohort.status == Cohort.Status.DRAFT:
        cohort_import_file(
            cohort=cohort, filename=DEMO_COHORT_FILE.name, content=DEMO_COHORT_FILE.read_bytes(), user=coordinator
        )
        if cohort_created:
            _seed_conflicts(cohort, accounts, coordinator)
            _seed_families(cohort, coordinator)
        cohort_assign(
            cohort=cohort,
            reviewers=[accounts[username] for username in DEMO_REVIEWERS],
            per_proposal=DEMO_REVIEWERS_PER_PROPOSAL,
            seed=DEMO_SEED,
            user=coordinator,
        )
        cohort.refresh_from_db()
    if cohort_created:
        _seed_reviews(cohort, accounts[DEMO_REVIEWERS[0]])
        _seed_calibration_reviews(cohort, [accounts[username] for username in DEMO_REVIEWERS[1:]])
    # The literature check of the demo's runs reads the demo references.
    demo_references_load()
    for group, cutoff in DEMO_CUTOFFS.items():
        if not InspirationCutoff.objects.filter(group=group).exists():  # a coordinator's own cutoff is kept
            cutoff_set(group=group, cutoff=cutoff, note=DEMO_CUTOFF_NOTE, user=coordinator)
    return DemoLoad(cohort=cohort, cohort_created=cohort_created, logins=logins)
