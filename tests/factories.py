"""Small builders for test records. They write through models directly: they set up state, not behaviour."""

import hashlib
import itertools

from django.contrib.auth.models import Group, User

from reviewapp.models import Assignment, Cohort, Proposal, ResearchTask

_counter = itertools.count(1)


def make_user(role: str | None = "reviewer", username: str | None = None, password: str = "pw-for-tests-1") -> User:
    user = User.objects.create_user(username=username or f"user{next(_counter)}", password=password)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def make_task(**fields) -> ResearchTask:
    n = next(_counter)
    fields.setdefault("key", f"TASK-{n}")
    fields.setdefault("question", f"Does factor {n} change lifespan in mice?")
    fields.setdefault("content_sha256", hashlib.sha256(fields["key"].encode()).hexdigest())
    return ResearchTask.objects.create(**fields)


def make_proposal(task: ResearchTask | None = None, **fields) -> Proposal:
    n = next(_counter)
    fields.setdefault("external_id", f"P-{n}")
    fields.setdefault("statement", f"Raising factor {n} extends healthy lifespan.")
    fields.setdefault("content_sha256", hashlib.sha256(fields["external_id"].encode()).hexdigest())
    return Proposal.objects.create(task=task or make_task(), **fields)


def make_cohort(proposals=(), **fields) -> Cohort:
    fields.setdefault("name", f"Cohort {next(_counter)}")
    cohort = Cohort.objects.create(**fields)
    cohort.proposals.add(*proposals)
    return cohort


def make_assignment(cohort: Cohort, reviewer: User, proposal: Proposal, position: int | None = None) -> Assignment:
    if position is None:
        position = Assignment.objects.filter(cohort=cohort, reviewer=reviewer).count() + 1
    return Assignment.objects.create(cohort=cohort, reviewer=reviewer, proposal=proposal, position=position)
