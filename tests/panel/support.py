"""Support for tests of the AI review panel: a scripted model server that also answers the panel's prompts (per
role and proposal claim, attempt by attempt), a roster whose panel roles point at it, and cohorts built through the
import service as coordinators build them."""

import json
import re
from collections import defaultdict

from reviewapp.models import Cohort
from reviewapp.panel.development import PATH_RUBRIC, RUN_RUBRIC, rubric
from reviewapp.panel.level_prompts import PATH_QUESTION, RUN_QUESTION
from reviewapp.panel.models import PANEL_ROLES
from reviewapp.panel.profile import DIMENSION_KEYS
from reviewapp.panel.prompts import (
    CRITIQUE_QUESTION,
    REFERENCE_REVIEWER,
    REFERENCE_SYSTEM,
    REVIEW_QUESTION,
    REVISION_QUESTION,
    ROLE_SYSTEMS,
)
from reviewapp.services.cohorts import cohort_create
from reviewapp.services.imports import cohort_import_file
from screening.llm.models import ModelEndpoint, Roster, RosterMember
from tests.screening_support import Script

_CLAIM = re.compile(r"^Claim: (.*)$", re.MULTILINE)


def level_reply(version: str, scores: dict | None = None) -> str:
    """A valid path or run assessment of a rubric: every dimension 3 with a quote, unless given."""
    keys = rubric(version).keys
    values = dict.fromkeys(keys, 3) | (scores or {})
    return json.dumps(
        {
            "dimensions": {
                key: {
                    "score": value,
                    "evidence": "" if isinstance(value, str) else "Claim quoted.",
                    "rationale": "Why.",
                }
                for key, value in values.items()
            }
        }
    )


def review_reply(scores: dict | None = None, eligible=True, rationale: str = "Clear design.", **overrides) -> str:
    """A valid review; scores default to 5 on every dimension."""
    values = dict.fromkeys(DIMENSION_KEYS, 5) | (scores or {})
    return json.dumps({"eligible": eligible, "scores": values, "rationale": rationale, **overrides})


class PanelScript(Script):
    """Answers the panel's prompts; everything else as Script.

    reviews[(role, claim)] → list of replies by attempt (the last one repeats), default: review_reply(); the
    fresh-context reference answers as role "reference_reviewer";
    critique(first_claim, second_claim) → reply (default prefers position A);
    revisions[(predecessor_claim, revision_claim)] → reply (default substantive progress)."""

    def __init__(self):
        super().__init__()
        self.reviews: dict = {}
        self.critique = lambda first, second: json.dumps({"preference": "A", "rationale": "First is stronger."})
        self.revisions: dict = {}
        # levels["path" | "run"] → list of replies by attempt (the last one repeats); default level_reply().
        self.levels: dict = {}
        self.panel_requests: list = []
        self.panel_attempts: dict = defaultdict(int)

    def answer(self, model: str, system: str, user: str):
        claims = _CLAIM.findall(user)
        if user.startswith(REVIEW_QUESTION):
            systems = {**ROLE_SYSTEMS, REFERENCE_REVIEWER: REFERENCE_SYSTEM}
            role = next(role for role, text in systems.items() if system.startswith(text))
            key = (role, claims[0])
            with self._lock:
                self.panel_requests.append(("review", key, user))
                self.panel_attempts[key] += 1
                attempt = self.panel_attempts[key]
            replies = self.reviews.get(key) or [review_reply()]
            return replies[min(attempt, len(replies)) - 1]
        if user.startswith(CRITIQUE_QUESTION):
            with self._lock:
                self.panel_requests.append(("critique", tuple(claims), user))
            return self.critique(claims[0], claims[1])
        for kind, question, version in (("path", PATH_QUESTION, PATH_RUBRIC), ("run", RUN_QUESTION, RUN_RUBRIC)):
            if user.startswith(question):
                with self._lock:
                    self.panel_requests.append((kind, tuple(claims), user))
                    attempt = sum(k == kind for k, _, _ in self.panel_requests)
                replies = self.levels.get(kind) or [level_reply(version)]
                return replies[min(attempt, len(replies)) - 1]
        if user.startswith(REVISION_QUESTION):
            with self._lock:
                self.panel_requests.append(("revision", tuple(claims), user))
            default = json.dumps({"category": "substantive_progress", "rationale": "Adds a control group."})
            return self.revisions.get(tuple(claims), default)
        return super().answer(model, system, user)

    def requests_of_kind(self, kind: str) -> list:
        return [(key, user) for k, key, user in self.panel_requests if k == kind]


def panel_roster(base_url: str, *, simulated: bool = False, roles=PANEL_ROLES) -> Roster:
    """A default roster whose panel roles are one OpenAI-compatible model of the server."""
    endpoint, _ = ModelEndpoint.objects.get_or_create(
        display_name="Panel model",
        defaults={
            "company": "Panel company",
            "protocol": ModelEndpoint.Protocol.OPENAI,
            "base_url": base_url,
            "model_id": "panel-model",
            "is_simulated": simulated,
            "timeout_seconds": 10,
            "concurrency_limit": 8,
        },
    )
    Roster.objects.filter(is_default=True).update(is_default=False)
    roster = Roster.objects.create(name=f"Panel roster {Roster.objects.count() + 1}", is_default=True)
    for role in roles:
        RosterMember.objects.create(roster=roster, role=role, endpoint=endpoint)
    return roster


def proposal(pid: str, task: str, statement: str | None = None, **fields) -> dict:
    return {
        "id": pid,
        "task": task,
        "statement": statement or f"Claim of {pid}: raising factor {pid} extends lifespan.",
        "mechanism": f"Mechanism of {pid}.",
        "prediction": f"Prediction of {pid}.",
        "investigation_plan": f"Plan of {pid}.",
        "data_requirements": f"Data of {pid}.",
        "alternative_explanations": f"Alternatives of {pid}.",
        "author": f"Author of {pid}",
        "author_company": "Hidden Co",
        **fields,
    }


def make_cohort(proposals: list[dict], *, tasks=None, user=None, name: str | None = None) -> Cohort:
    """A draft cohort filled through the import service."""
    task_keys = tasks or sorted({item["task"] for item in proposals})
    cohort = cohort_create(name=name or f"Panel cohort {Cohort.objects.count() + 1}", user=user)
    content = json.dumps(
        {
            "tasks": [
                {"key": key, "question": f"Research question number {n}?", "background": f"Background number {n}."}
                for n, key in enumerate(task_keys, start=1)
            ],
            "proposals": proposals,
        }
    ).encode()
    cohort_import_file(cohort=cohort, filename="cohort.json", content=content, user=user)
    return cohort
