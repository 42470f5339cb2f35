"""The demo gives every role real work: load_demo queues, on the simulated models only and only once, the AI panel and
critique, a benchmark set's runs (judged once pooled), one public run and an inspiration audit; a real worker then
does all of it through the product's own services, and every page a role opens has something to show."""

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet, Judge, JudgeScore, RandomControlDraw
from reviewapp.demo.cohort import DEMO_COHORT_NAME, DEMO_REVIEWERS
from reviewapp.demo.work import DEMO_BENCHMARK_NAME, DEMO_BENCHMARK_TASKS, DEMO_JUDGES, DEMO_RUN_QUESTION
from reviewapp.inspiration.models import InspirationAudit
from reviewapp.models import Assignment, BackgroundJob, Cohort, Review
from screening.management.commands.setup_roster import roster_setup_default
from screening.models import Run, RunWorkItem
from tests.screening_support import (
    PROVIDER_KEYS,
    simulated_default_roster,
    wait_for,
    worker_on_test_redis,
)


def load_demo() -> str:
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def demo_counts() -> dict[str, int]:
    return {
        "jobs": BackgroundJob.objects.count(),
        "benchmark sets": BenchmarkSet.objects.count(),
        "judges": Judge.objects.count(),
        "runs": Run.objects.count(),
        "audits": InspirationAudit.objects.count(),
        "reviews": Review.objects.count(),
        "assignments": Assignment.objects.count(),
    }


@pytest.fixture
def simulated_roster(db, monkeypatch):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    roster_setup_default()


def test_load_demo_queues_every_role_s_work_once(simulated_roster):
    output = load_demo()

    assert "Queued for the worker" in output
    assert sorted(BackgroundJob.objects.values_list("kind", flat=True)) == ["ai_critique", "ai_panel"]
    benchmark = BenchmarkSet.objects.get(name=DEMO_BENCHMARK_NAME)
    assert "demonstration data" in benchmark.name and "Not research data" in benchmark.description
    assert benchmark.benchmark_tasks.count() == DEMO_BENCHMARK_TASKS
    assert benchmark.benchmark_tasks.filter(run__isnull=True).count() == 0, "every task's run is queued"
    judges = list(benchmark.judges.select_related("endpoint"))
    assert [judge.name for judge in judges] == list(DEMO_JUDGES)
    assert len({judge.company for judge in judges}) == 4 and all(judge.endpoint.is_simulated for judge in judges)
    public = Run.objects.get(question=DEMO_RUN_QUESTION)
    assert public.simulated and public.status == Run.Status.QUEUED
    assert not hasattr(public, "benchmark_task")
    audit = InspirationAudit.objects.get()
    assert audit.cohort.name == DEMO_COHORT_NAME

    counts = demo_counts()
    second = load_demo()
    assert "Queued for the worker" not in second
    assert demo_counts() == counts


def test_the_demo_set_holds_the_analyses_optional_tables_that_need_no_hypothesis(simulated_roster, client):
    from reviewapp.benchmarks.selectors import benchmark_statistics

    load_demo()
    benchmark = BenchmarkSet.objects.get(name=DEMO_BENCHMARK_NAME)
    study = benchmark_statistics(benchmark).study
    assert study.task_selection is not None and study.task_selection.check.order_reproduces
    assert study.task_selection.final_tasks_in_set == DEMO_BENCHMARK_TASKS
    assert "Demonstration query" in study.task_selection.query
    assert benchmark.forecasters.count() == 4  # the roster's stage-1 and stage-2 models with their companies
    assert benchmark.benchmark_tasks.filter(hint_score__isnull=True).count() == 0
    assert benchmark.design == "seed-001"  # the full forecast matrix for the analyses that need it
    assert all(task.key_elements for task in benchmark.benchmark_tasks.all())


def test_the_demo_holds_a_labelled_50_50_set_whose_sections_are_filled(simulated_roster, client):
    from reviewapp.benchmarks.selectors import benchmark_statistics
    from reviewapp.demo.forecast_tables import DEMO_STATEMENTS_NAME

    load_demo()
    statements = BenchmarkSet.objects.get(name=DEMO_STATEMENTS_NAME)
    assert "demonstration data" in statements.name and "Not research data" in statements.description
    study = benchmark_statistics(statements).study
    assert study.balanced_accuracy and study.pair_decisions[0].pairs == DEMO_BENCHMARK_TASKS
    rule = study.direction_rule
    assert rule is not None and rule.labels.statements == 2 * DEMO_BENCHMARK_TASKS and rule.labelled_pairs == 2
    client.force_login(User.objects.get(username="demo-analyst"))
    page = client.get(f"/benchmarks/{statements.pk}/statistics/").content.decode()
    contents = page[page.index('<nav class="contents-bar"') : page.index("</nav>", page.index('class="contents-bar"'))]
    for slug in ("balanced-accuracy", "pair-decisions", "direction-rule"):
        entry = contents[contents.index(f'href="#{slug}"') :]
        assert entry[: entry.index("</li>")].endswith("filled</span>"), slug


def test_the_demo_set_gets_answers_under_the_other_instructions_for_every_pooled_hypothesis(simulated_roster):
    from reviewapp.benchmarks.selectors import benchmark_statistics
    from reviewapp.demo.forecast_tables import demo_forecast_tables_import, forecasting_models
    from screening.llm.models import Roster
    from tests.benchmark_support import hypothesis, make_set, scores, task

    roster = Roster.objects.get(is_default=True)
    benchmark = make_set(
        {
            "tasks": [task("T1"), task("T2")],
            "hypotheses": [hypothesis(key, f"{key}-{n}") for key in ("T1", "T2") for n in range(3)],
            "scores": [row for n in range(3) for row in scores("T1", f"T1-{n}", [0, 4, 4 - 3 * (n % 2), 1])]
            + [row for n in range(3) for row in scores("T2", f"T2-{n}", [0, 1 + 3 * (n % 2), 4, 1])],
        },
        roster=roster,
    )
    demo_forecast_tables_import(benchmark)
    models = forecasting_models(roster)
    for stored in BenchmarkHypothesis.objects.filter(benchmark=benchmark):
        assert set(stored.instruction_forecasts) == {"detailed", "single"}
        assert all(set(answers) == set(models) for answers in stored.instruction_forecasts.values())
        assert set(stored.probabilities) == set(models)
    study = benchmark_statistics(benchmark).study
    assert study.instruction_comparison is not None and study.instruction_comparison.pairs
    assert {ranking.model for generator in study.generators for ranking in generator.ranking} == set(models)


def test_load_demo_queues_nothing_for_a_real_provider(db, monkeypatch):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    # OpenAI's key makes GPT-6 Astra (a generator), GPT-6 Luna (the inspiration judge) and GPT-5.6 Sol (the AI panel)
    # real: every piece of the demo would ask a real model.
    monkeypatch.setenv("OPENAI_API_KEY", "a-provider-key-set-by-the-test")
    roster_setup_default()

    load_demo()

    assert not BenchmarkSet.objects.exists() and not Run.objects.exists() and not InspirationAudit.objects.exists()
    assert not BackgroundJob.objects.filter(kind__in=("ai_panel", "ai_critique")).exists()


@pytest.fixture
def worker(settings, monkeypatch, redis_url, transactional_db):
    with worker_on_test_redis(settings, monkeypatch, redis_url, "demo", concurrency=6, shutdown_timeout=60):
        yield


def _all_done() -> bool:
    jobs = set(BackgroundJob.objects.values_list("state", flat=True))
    runs = set(Run.objects.values_list("status", flat=True))
    audits = set(InspirationAudit.objects.values_list("state", flat=True))
    judging = BackgroundJob.objects.filter(kind="benchmark_judging").count()
    repeating = RunWorkItem.objects.filter(step=RunWorkItem.Step.REPEAT).exclude(state__in=("done", "failed"))
    return (
        judging == len(DEMO_JUDGES)
        and not repeating.exists()
        and jobs <= {"succeeded", "failed"}
        and runs <= {"completed"}
        and (audits <= {"done", "failed"})
    )


@pytest.mark.broker
@pytest.mark.postgres
def test_a_worker_turns_the_demo_into_real_work_for_every_role(needs_postgres, settings, monkeypatch, worker):
    with simulated_default_roster(settings, monkeypatch, latency=0.0, seed=13):
        load_demo()
        wait_for(_all_done, timeout=600, what="the demo's work")

    assert set(BackgroundJob.objects.values_list("state", flat=True)) == {"succeeded"}
    assert set(Run.objects.values_list("status", flat=True)) == {"completed"}
    # Analyst: a judged benchmark set with a random control, statistics, Table S and bundle.
    benchmark = BenchmarkSet.objects.get(name=DEMO_BENCHMARK_NAME)
    hypotheses = BenchmarkHypothesis.objects.filter(benchmark=benchmark).count()
    assert hypotheses >= DEMO_BENCHMARK_TASKS * 10
    assert JudgeScore.objects.filter(judge__benchmark=benchmark).count() == hypotheses * len(DEMO_JUDGES)
    assert RandomControlDraw.objects.filter(benchmark_task__benchmark=benchmark).count() == DEMO_BENCHMARK_TASKS
    analyst = Client()
    analyst.force_login(User.objects.get(username="demo-analyst"))
    statistics = analyst.get(f"/api/v1/benchmarks/{benchmark.pk}/statistics").json()
    # Every hypothesis is judged; the statistics read the runs' one-request generation, the imported methods and
    # re-generation only the comparison of generation methods.
    assert (
        statistics["judged"]
        == BenchmarkHypothesis.objects.filter(benchmark=benchmark, hypothesis__isnull=False).count()
    )
    methods = statistics["study"]["generation_methods"]
    assert {(rate["method"], rate["generation_round"]) for rate in methods["rates"]} == {
        ("one request", 1),
        ("multi-step", 1),
        ("Omega Point", 1),
        ("one request", 2),
    }
    assert methods["round_comparisons"] and methods["excluded"][0]["reason"] == "cut_reply"
    assert all(generator["primary"] is not None for generator in statistics["generators"])
    assert any(generator["drawn_control"] is not None for generator in statistics["generators"])
    for suffix in ("table-s.xlsx", "bundle.zip"):
        download = analyst.get(f"/api/v1/benchmarks/{benchmark.pk}/{suffix}")
        assert download.status_code == 200 and len(download.getvalue()) > 1000
    page = analyst.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    # The demo's data fill the sections that need the full matrix and the imported tables that need no hypothesis.
    contents = page[page.index('<nav class="contents-bar"') : page.index("</nav>", page.index('class="contents-bar"'))]
    filled = ("forecast-rules", "rule-enumeration", "task-selection", "key-elements", "hint-degree")
    # …and the demonstration's answers under the other instructions with their probabilities, imported once pooled.
    for slug in (*filled, "generation-methods", "originality", "rerun", "instruction-comparison", "ranking"):
        entry = contents[contents.index(f'href="#{slug}"') :]
        assert entry[: entry.index("</li>")].endswith("filled</span>"), slug
    # Everyone: one completed public run, labelled simulated.
    public = Run.objects.get(question=DEMO_RUN_QUESTION)
    body = Client().get(f"/api/v1/open-hypothesis/runs/{public.public_id}").json()
    assert body["status"] == "completed" and body["simulated"] is True and body["counts"]["delivered"] > 0
    # Coordinator and analyst: the AI panel, its ratings and an inspiration audit of the demo cohort.
    cohort = Cohort.objects.get(name=DEMO_COHORT_NAME)
    panel = analyst.get(f"/api/v1/cohorts/{cohort.pk}/ai-panel").json()
    assert panel["simulated"] is True and all(row["reviews"] for row in panel["proposals"])
    evaluation = analyst.get(f"/api/v1/cohorts/{cohort.pk}/evaluation").json()
    for level in ("paths", "runs"):
        assert evaluation[level]["assessed"] == evaluation[level]["total"] > 0
    assert evaluation["transitions"]["judged"] == evaluation["transitions"]["total"] > 0
    assert evaluation["families"]["with_evidence"] > 0
    ratings = analyst.get(f"/api/v1/cohorts/{cohort.pk}/ratings").json()["ratings"]
    assert len(ratings) == cohort.proposals.count()
    audit = InspirationAudit.objects.get(cohort=cohort)
    assert audit.state == "done" and audit.simulated and audit.summary["totals"]["versions"] == cohort.proposals.count()
    # Reviewer: submitted reviews, a draft and reviews still to do.
    submitted = Review.objects.filter(assignment__cohort=cohort, status=Review.Status.SUBMITTED).count()
    assert submitted >= 55
    waiting = Assignment.objects.filter(cohort=cohort, reviewer__username=DEMO_REVIEWERS[0], review__isnull=True)
    assert waiting.exists()

    # A second start queues nothing more.
    counts = demo_counts()
    with simulated_default_roster(settings, monkeypatch, latency=0.0, seed=13):
        load_demo()
    assert demo_counts() == counts
