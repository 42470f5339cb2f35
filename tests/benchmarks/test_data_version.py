"""A set's data version moves with every write of what its statistics read, so a cached statistics page (keyed by
the version alone) is always the page of the data as they are."""

import inspect
import pkgutil
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.benchmarks import services
from reviewapp.benchmarks.models import BenchmarkSet
from reviewapp.benchmarks.selectors import benchmark_data_version
from reviewapp.benchmarks.services.imports import TABLES
from reviewapp.benchmarks.services.judging import judging_start
from reviewapp.benchmarks.services.sets import (
    benchmark_forecasts_repeat,
    benchmark_run,
    benchmark_task_rerun,
    judge_add,
)
from reviewapp.services import jobs
from screening.llm.models import ModelEndpoint
from screening.llm.simulator import SimulatorConfig, start_simulator
from screening.models import Run
from tests import factories
from tests.benchmark_support import JUDGES, hypothesis, import_json, judged_set, make_set, scores, task
from tests.screening_support import drive, make_roster

# One small record of every table of the import format, each new to judged_set() (tasks T1, T2; hypotheses a1–a4).
EXAMPLES: dict[str, list[dict]] = {
    "tasks": [task("T3")],
    "hypotheses": [hypothesis("T1", "a9", selected=False, forecasts={"m1": False, "m2": True})],
    "scores": scores("T1", "a1", [2], judges=[("Judge Epsilon", "Epsilon Co")]),
    "forecasters": [{"model": "m1", "company": "Alpha Labs"}],
    "probabilities": [{"task": "T1", "hypothesis": "a1", "model": "m1", "probability": 0.8}],
    "repeat_forecasts": [{"task": "T1", "hypothesis": "a1", "model": "m1", "answer": False}],
    "instruction_forecasts": [
        {"task": "T1", "hypothesis": "a1", "instruction": "single", "model": "m1", "answer": True}
    ],
    "directions": [{"task": "T1", "hypothesis": "a1", "direction": "favourable"}],
    "hints": [{"task": "T1", "hint_score": 2}],
    "key_elements": [{"task": "T1", "element": "raising the factor"}],
    "quality_scores": [
        {"task": "T1", "hypothesis": "a1", "judge": "Judge Beta", "originality": 7, "feasibility": 5, "clarity": 6}
    ],
    "selection_log": [{"query": "aging[MeSH Terms]", "salt": "a salt", "found": 3}],
    "selection_records": [{"pmid": "41000001", "status": "excluded", "reason": "review article"}],
    "excluded_sets": [{"task": "T1", "generator": "Gen Alpha", "method": "Omega Point", "reason": "cut_reply"}],
}
# What an import must hold besides the table itself (the selection records need their log).
NEEDS = {"selection_records": {"selection_log": EXAMPLES["selection_log"]}}

# Every function of the benchmark room's services that writes what the statistics read; each is run below.
WRITERS = {
    "benchmark_import_file",
    "judge_add",
    "judging_job_run",
    "benchmark_run",
    "benchmark_task_rerun",
    "benchmark_forecasts_repeat",
    "random_control_draw",
    "random_control_freeze",
    "benchmark_run_pooling",
    "benchmark_run_pooled",
    "benchmark_set_touch",
}
# …and every other, with why it leaves the version alone.
NOT_WRITERS = {
    "benchmark_create": "a new set has a new version",
    "benchmark_roster_set": "the roster only decides how future runs ask (runs record the roster they used)",
    "judging_start": "it queues jobs; judging_job_run writes the scores",
    "judging_jobs": "reads",
    "judge_messages": "builds a request",
    "judge_order": "orders a request's hypotheses",
    "parse_judge_scores": "reads a reply",
    "hypothesis_content_sha256": "a fingerprint of a record",
    "frozen_set_sha256": "a fingerprint of a pool",
    "task_shuffle_seed": "derives a seed",
    "complete_roster_snapshot": "reads a roster",
    "set_roster": "reads a roster",
    "quality_scores_write": "part of benchmark_import_file's transaction",
    "clean_probability": "cleans an imported value",
    "clean_number": "cleans an imported value",
    "clean_whole": "cleans an imported value",
    "clean_round": "cleans a value",
    "excluded_set_key": "names a record",
    "clean_quality": "cleans an imported value",
    "clean_status": "cleans an imported value",
    "clean_instruction": "cleans an imported value",
    "clean_direction": "cleans an imported value",
}


def version(benchmark: BenchmarkSet) -> str:
    return benchmark_data_version(benchmark.pk)


def statistics_page(client, benchmark: BenchmarkSet) -> str:
    """The page without its per-request CSRF tokens."""
    html = client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    return re.sub(r'("X-CSRFToken": |name="csrfmiddlewaretoken" value=)"[^"]*"', "", html)


def test_every_function_of_the_rooms_services_is_known_to_move_the_version_or_not():
    """A new service that writes the set's data calls benchmark_set_touch in its transaction and joins WRITERS (and
    a test here); any other joins NOT_WRITERS with its reason."""
    functions = set()
    for module_info in pkgutil.iter_modules(services.__path__):
        module = __import__(f"{services.__name__}.{module_info.name}", fromlist=["_"])
        functions |= {
            name
            for name, value in inspect.getmembers(module, inspect.isfunction)
            if value.__module__ == module.__name__ and not name.startswith("_")
        }
    assert functions - WRITERS - set(NOT_WRITERS) == set(), "classify these in WRITERS or NOT_WRITERS"
    assert (WRITERS | set(NOT_WRITERS)) - functions == set(), "these no longer exist"


def test_every_table_of_the_import_format_has_an_example_here():
    assert set(EXAMPLES) == set(TABLES), "add a small record of the new table to EXAMPLES"


@pytest.mark.parametrize("table", TABLES)
def test_importing_any_table_moves_the_version_and_the_cached_page_shows_the_new_data(db, client, table):
    cache.clear()
    client.force_login(factories.make_user("analyst"))
    benchmark = judged_set()
    before = version(benchmark)
    assert before in statistics_page(client, benchmark)  # now cached under this version

    import_json(benchmark, {table: EXAMPLES[table], **NEEDS.get(table, {})})

    assert version(benchmark) != before
    cached = statistics_page(client, benchmark)
    assert version(benchmark) in cached and before not in cached
    cache.clear()
    assert statistics_page(client, benchmark) == cached  # what the data as they are give


def test_the_same_file_again_leaves_the_version_as_it_was(db):
    benchmark = judged_set()
    before = version(benchmark)
    import_json(benchmark, {"tasks": [task("T1")]})  # nothing new
    import_json(benchmark, {"hints": EXAMPLES["hints"]})
    after = version(benchmark)
    import_json(benchmark, {"hints": EXAMPLES["hints"]})
    assert version(benchmark) == after != before


def test_adding_a_judge_and_its_scores_move_the_version(db):
    benchmark = make_set({"tasks": [task("T1")], "hypotheses": [hypothesis("T1", f"h{n}") for n in range(3)]})
    before = version(benchmark)
    server = start_simulator(SimulatorConfig(seed=1))
    try:
        endpoint = ModelEndpoint.objects.create(
            display_name="Judge model",
            company=JUDGES[0][1],
            protocol=ModelEndpoint.Protocol.OPENAI,
            base_url=server.url + "/v1",
            model_id="judge-sim",
            is_simulated=True,
            api_key_env="SIMULATED_JUDGE_API_KEY",
            timeout_seconds=10,
        )
        judge_add(benchmark=benchmark, endpoint=endpoint)
        added = version(benchmark)
        assert added != before
        (job,) = judging_start(benchmark=benchmark, user=None)
        assert version(benchmark) == added  # queued, nothing written yet
        jobs.job_run(job_id=job.pk)
    finally:
        server.shutdown()
    assert version(benchmark) != added


def test_running_pooling_forecasting_repeating_and_running_again_each_move_the_version(db, scripted):
    _, server = scripted
    benchmark = make_set({"tasks": [task("T1")]}, roster=make_roster(server.base_url, translator=None))
    seen = [version(benchmark)]

    def moved() -> bool:
        seen.append(version(benchmark))
        return seen[-1] != seen[-2]

    (run,) = benchmark_run(benchmark=benchmark)
    assert moved()
    drive(run, max_rounds=2)  # generated, random control drawn, pooled and frozen
    assert benchmark.hypotheses.exists() and moved()
    drive(run)  # forecasts recorded by the screening pipeline, selection made
    assert Run.objects.get(pk=run.pk).status == Run.Status.COMPLETED and moved()
    benchmark_forecasts_repeat(benchmark=benchmark)
    assert moved()
    drive(run)  # round 2 recorded
    assert moved()

    Run.objects.filter(pk=run.pk).update(status=Run.Status.FAILED_AT_NOVELTY)
    benchmark_task_rerun(benchmark=benchmark, task_key="T1")  # the failed run's hypotheses go
    assert not benchmark.hypotheses.exists() and moved()


def test_a_statistics_page_drawn_before_reads_the_version_and_none_of_the_sets_data(db, client):
    cache.clear()
    client.force_login(factories.make_user("analyst"))
    benchmark = judged_set()
    first = statistics_page(client, benchmark)
    with CaptureQueriesContext(connection) as queries:
        again = statistics_page(client, benchmark)
    assert again == first
    read = " ".join(query["sql"] for query in queries)
    for table in ("benchmarkhypothesis", "judge", "judgescore", "qualityscore", "randomcontroldraw"):
        assert f'"reviewapp_{table}"' not in read
    assert len(queries) <= 8
