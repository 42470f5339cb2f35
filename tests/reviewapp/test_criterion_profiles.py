"""Each author's criterion profile on a cohort's statistics page (docs/protocol.md#criterion-profiles): the mean of the
overall value and of each criterion, "can't judge" left out and counted, with intervals from resampling whole
research tasks; for coordinators and analysts, never reviewers."""

import json
import random

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from reviewapp import analysis
from reviewapp.models import Review
from reviewapp.protocol import CANT_JUDGE, CRITERION_FIELDS
from reviewapp.services.cohorts import cohort_create
from reviewapp.services.imports import cohort_import_file
from tests import factories

FIELDS = ("overall", "importance", "data_fit")


def test_a_hand_checked_profile():
    reviews = [
        {"task": "T1", "author": "Gen A", "proposal": 1, "overall": 3, "importance": "3", "data_fit": CANT_JUDGE},
        {"task": "T1", "author": "Gen A", "proposal": 1, "overall": 4, "importance": "4", "data_fit": "2"},
        {"task": "T2", "author": "Gen A", "proposal": 2, "overall": 2, "importance": "2", "data_fit": ""},
        {"task": "T2", "author": "Gen B", "proposal": 3, "overall": 5, "importance": CANT_JUDGE, "data_fit": "4"},
    ]
    a, b = analysis.criterion_profiles(reviews, FIELDS, resamples=0, cant_judge=CANT_JUDGE)
    assert (a.author, a.reviews, a.proposals, a.tasks) == ("Gen A", 3, 2, 2)
    assert a.of("overall").mean.value == pytest.approx(3.0)  # (3 + 4 + 2) / 3
    assert a.of("importance").mean.value == pytest.approx(3.0)
    data_fit = a.of("data_fit")
    assert (data_fit.mean.value, data_fit.ratings, data_fit.cant_judge, data_fit.missing) == (2.0, 1, 1, 1)
    importance = b.of("importance")
    assert importance.mean.value is None and (importance.ratings, importance.cant_judge) == (0, 1)
    assert b.of("overall").mean.value == 5.0


def _independent_interval(reviews, author, field, resamples, seed):
    """The documented resampling done the slow way: resample r draws tasks
    default_rng(seed).integers(0, n_tasks, size=(resamples, n_tasks))[r] (tasks in order of first appearance), every
    review of a drawn task counts once per draw, and the mean is recomputed from the drawn reviews."""
    order = list(dict.fromkeys(review["task"] for review in reviews))
    draws = np.random.default_rng(seed).integers(0, len(order), size=(resamples, len(order)))
    means = []
    for draw in draws:
        points = [
            float(review[field])
            for task_index in draw
            for review in reviews
            if review["task"] == order[task_index]
            and review["author"] == author
            and review[field] not in (CANT_JUDGE, "", None)
        ]
        if points:
            means.append(sum(points) / len(points))
    return np.percentile(means, [2.5, 97.5]), resamples - len(means)


def test_the_intervals_resample_whole_tasks_as_documented():
    rng = random.Random(4)
    reviews = []
    for task in range(7):
        for author in ("Gen A", "Gen B"):
            for _reviewer in range(rng.randint(0, 3)):
                reviews.append(
                    {
                        "task": f"T{task}",
                        "author": author,
                        "proposal": f"{task}-{author}",
                        "overall": rng.randint(1, 5),
                        "importance": rng.choice(["1", "2", "3", "4", CANT_JUDGE]),
                        "data_fit": rng.choice(["1", "2", "3", "4", "", CANT_JUDGE]),
                    }
                )
    profiles = analysis.criterion_profiles(reviews, FIELDS, resamples=300, seed=11, cant_judge=CANT_JUDGE)
    for profile in profiles:
        for field in FIELDS:
            item = profile.of(field)
            rated = [
                float(r[field])
                for r in reviews
                if r["author"] == profile.author and r[field] not in (CANT_JUDGE, "", None)
            ]
            assert item.mean.value == pytest.approx(sum(rated) / len(rated))
            (low, high), undefined = _independent_interval(reviews, profile.author, field, 300, 11)
            assert (item.mean.low, item.mean.high) == (pytest.approx(low), pytest.approx(high))
            assert item.mean.undefined_resamples == undefined
            assert item.ratings == len(rated)
            assert item.cant_judge == sum(r["author"] == profile.author and r[field] == CANT_JUDGE for r in reviews)


@pytest.fixture
def cohort(db, coordinator):
    cohort = cohort_create(name="Profiles", user=coordinator)
    proposals = [
        {"id": f"p{n}", "task": f"T{n % 3}", "statement": f"Claim {n}.", "author": ("Gen Alpha", "Gen Beta")[n % 2]}
        for n in range(12)
    ]
    tasks = [{"key": f"T{n}", "question": f"Question {n}?"} for n in range(3)]
    content = json.dumps({"tasks": tasks, "proposals": proposals}).encode()
    cohort_import_file(cohort=cohort, filename="profiles.json", content=content, user=coordinator)
    reviewers = [factories.make_user("reviewer") for _ in range(2)]
    for proposal in cohort.proposals.order_by("external_id"):
        n = int(proposal.external_id[1:])
        for index, reviewer in enumerate(reviewers):
            Review.objects.create(
                assignment=factories.make_assignment(cohort, reviewer, proposal),
                status=Review.Status.SUBMITTED,
                overall=1 + (n + index) % 5,
                recommendation="revise",
                flaw_verdict="absent",
                submitted_at=timezone.now(),
                **dict.fromkeys(CRITERION_FIELDS, str(1 + (n + index) % 4))
                | ({"importance": CANT_JUDGE} if index == 1 and n % 2 else {}),
            )
    return cohort


def test_the_statistics_page_shows_each_authors_profile_with_intervals(client, analyst, coordinator, cohort):
    for user in (analyst, coordinator):
        client.force_login(user)
        page = client.get(reverse("cohort-statistics", args=[cohort.pk])).content.decode()
        section = page[page.index('id="criterion-profiles"') : page.index('id="reviewer-agreement"')]
        assert "Gen Alpha" in section and "Gen Beta" in section and "Importance (1–4)" in section
        assert "6 proposals, 3 tasks" in section and "6 can't judge" in section
        assert "seed 20261026" in section and "10000 resamples" in section
    table = client.get(reverse("cohort-figure", args=[cohort.pk, "criterion-profiles", "csv"])).content.decode()
    lines = table.strip().splitlines()
    assert lines[0] == "author,criterion,mean,low,high,ratings,cant_judge,missing,resamples,seed"
    beta_importance = next(line for line in lines if line.startswith("Gen Beta,importance,"))
    assert beta_importance.split(",")[5:8] == ["6", "6", "0"]
    assert client.get(reverse("cohort-figure", args=[cohort.pk, "criterion-profiles", "png"])).status_code == 200


def test_reviewers_never_see_the_profiles(client, reviewer, cohort):
    client.force_login(reviewer)
    assert client.get(reverse("cohort-statistics", args=[cohort.pk])).status_code == 403
    assert client.get(reverse("cohort-figure", args=[cohort.pk, "criterion-profiles", "csv"])).status_code == 403
