"""The demonstration cohort that `make run` loads: research tasks and proposals in the biology of ageing,
written by hand for the demo (not research data), and demo accounts for each role.

Loading is idempotent: the accounts, the cohort, its proposals and its assignments are created once; only the
demo passwords change on every load, so no password outlives the run that printed it.
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone

from literature.demo import demo_references_load
from reviewapp import protocol
from reviewapp.core.roles import ANALYST, COORDINATOR, REVIEWER
from reviewapp.inspiration.models import InspirationCutoff
from reviewapp.inspiration.services import cutoff_set
from reviewapp.models import Assignment, BackgroundJob, Cohort
from reviewapp.panel.services.common import PanelError
from reviewapp.panel.services.critique import critique_start
from reviewapp.panel.services.panel import panel_start_for_cohort
from reviewapp.selectors.packets import SECTION_LABELS
from reviewapp.services.accounts import tokens_revoke_all
from reviewapp.services.cohorts import cohort_assign, cohort_create
from reviewapp.services.imports import cohort_import_file
from reviewapp.services.reviews import review_save, review_submit
from screening.llm import roster_endpoint

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

# demo-reviewer-1's first proposal gets this submitted review, the second a draft, so progress pages show both.
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


def _demo_account(*, username: str, role: str) -> tuple[User, DemoLogin]:
    """Create or update a demo account with exactly its role and a fresh password (only the hash is stored)."""
    account, _ = User.objects.get_or_create(username=username)
    password = secrets.token_urlsafe(9)
    account.set_password(password)
    account.is_active = True
    account.save()
    account.groups.set([Group.objects.get(name=role)])
    tokens_revoke_all(owner=account)  # tokens made with an earlier demo password end with it
    return account, DemoLogin(username=username, role=role, password=password)


def _seed_reviews(cohort: Cohort, reviewer: User) -> None:
    first, second = (
        Assignment.objects.select_related("cohort").filter(cohort=cohort, reviewer=reviewer).order_by("position")[:2]
    )
    # A page opened a few minutes before each save gives the progress page a time per review.
    opened_at = timezone.now() - timedelta(minutes=4)
    review_submit(assignment=first, reviewer=reviewer, data=_SUBMITTED_ANSWERS, version=0, opened_at=opened_at)
    review_save(assignment=second, reviewer=reviewer, data=_DRAFT_ANSWERS, version=0, opened_at=opened_at)


def _fraction(*parts: str) -> float:
    return int(hashlib.sha256(":".join(parts).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _point(quality: float, noise: float, top: int) -> int:
    """A point of a 1–top scale for a quality in 0–1 shifted by noise."""
    return 1 + round((top - 1) * min(1.0, max(0.0, quality + noise)))


def _demo_answers(assignment: Assignment) -> dict:
    """A demonstration review: fuller proposals tend to get better answers, with a hash of reviewer and proposal as
    noise, and some "can't judge" (written for the demo, not anyone's judgement)."""
    proposal = assignment.proposal
    key = f"{assignment.reviewer.username}:{proposal.external_id}"
    sections = sum(bool(getattr(proposal, name)) for name, _ in SECTION_LABELS)
    quality = min(1.0, 0.04 * sections + 0.8 * _fraction("quality", key))
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
            data=_demo_answers(assignment),
            version=0,
            opened_at=opened_at,
        )


@transaction.atomic
def demo_load() -> DemoLoad:
    """Ensure the demo accounts (new passwords every time), the demo cohort, its proposals and assignments."""
    accounts, logins = {}, []
    for username, role in DEMO_ACCOUNTS:
        accounts[username], login = _demo_account(username=username, role=role)
        logins.append(login)
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


# The AI panel of the demo cohort: started only when every model it asks is the simulated server (never spends a real
# provider's money), and only once.
DEMO_COMPARISONS_PER_PROPOSAL = 4
PANEL_ROLES = ("rubric_judge", "domain_scientist", "methods_reviewer", "critic", "revision_judge")


def demo_panel_start(cohort: Cohort) -> list[BackgroundJob]:
    """Queue the AI panel and the pairwise critique of the demo cohort, for the worker `make run` starts."""
    endpoints = [roster_endpoint(role) for role in PANEL_ROLES]
    if not all(endpoint is not None and endpoint.is_simulated for endpoint in endpoints):
        return []
    if BackgroundJob.objects.filter(kind__in=("ai_panel", "ai_critique"), params__cohort_id=cohort.pk).exists():
        return []
    coordinator = User.objects.filter(username=DEMO_COORDINATOR).first()
    try:
        return [
            panel_start_for_cohort(cohort=cohort, user=coordinator),
            critique_start(cohort=cohort, per_proposal=DEMO_COMPARISONS_PER_PROPOSAL, seed=DEMO_SEED, user=coordinator),
        ]
    except PanelError:
        return []
