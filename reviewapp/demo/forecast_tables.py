"""Demonstration tables for the analyses of forecasts that the simulated runs do not produce (not research data):

- answers of the set's forecasting models under the detailed instruction and the single-statement question, and
  their numerical probabilities, for the demo benchmark set's hypotheses once its runs have pooled them (the runs
  ask the short question), so that the instruction comparison and the ranking by probability are filled;
- a 50/50 set of statements, one confirmed and one reversed per demo task, with the forecasting models' answers and
  each statement's favourable-direction label, so that balanced accuracy, the pair decisions and the
  favourable-direction rule are filled.

Every value here is drawn from a hash of its names, written for demonstrating the product: no model gave it.
"""

import hashlib
import json
import logging

from django.db import transaction

from reviewapp.benchmarks.models import BenchmarkHypothesis, BenchmarkSet
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.services.sets import benchmark_create
from reviewapp.core.errors import ServiceError
from screening.llm.models import Roster

logger = logging.getLogger(__name__)

DEMO_STATEMENTS_NAME = "Demo: 50/50 statements (demonstration data)"
DEMO_STATEMENTS_DESCRIPTION = (
    "A 50/50 set written for demonstrating the product: for each of four demo tasks, the published statement and its "
    "reversal, with the forecasting models' answers and each statement's favourable-direction label. Not research "
    "data: the answers and labels were written for the demonstration, no model gave them."
)
DEMO_STATEMENTS_GENERATOR = ("Demonstration statements", "Demonstration")
# (task, confirmed statement, its label, reversed statement, its label); "" is unlabelled.
DEMO_STATEMENTS = (
    (
        "DEMO-CH-1",
        "Blocking the IL-1 receptor slows the clonal expansion of TET2-mutant stem cells in aged mice.",
        "favourable",
        "Blocking the IL-1 receptor speeds the clonal expansion of TET2-mutant stem cells in aged mice.",
        "unfavourable",
    ),
    (
        "DEMO-SEN-1",
        "Intermittent senolytic treatment lowers circulating SASP proteins in pre-frail older adults.",
        "favourable",
        "Intermittent senolytic treatment raises circulating SASP proteins in pre-frail older adults.",
        "unfavourable",
    ),
    (
        "DEMO-NAD-1",
        "NR supplementation leaves mitochondrial respiration in the muscle of older adults unchanged.",
        "",
        "NR supplementation improves mitochondrial respiration in the muscle of older adults.",
        "favourable",
    ),
    (
        "DEMO-EPI-1",
        "Two years of moderate caloric restriction slow a pace-of-ageing methylation measure.",
        "favourable",
        "Two years of moderate caloric restriction change first-generation methylation clocks.",
        "",
    ),
)
DEMO_INSTRUCTIONS = ("detailed", "single")  # the runs ask the short question


def demo_draw(*names: str) -> float:
    """A number in [0, 1) fixed by the names: the demonstration's stand-in for a model's answer."""
    digest = hashlib.sha256("\u241f".join(names).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def forecasting_models(roster: Roster) -> list[str]:
    return sorted(
        {
            member.endpoint.model_id
            for member in roster.members.select_related("endpoint").filter(role__in=("stage1", "stage2"))
        }
    )


def demo_forecast_tables_file(benchmark: BenchmarkSet, models: list[str]) -> bytes:
    """The answers under the other instructions and the probabilities for every hypothesis of the set."""
    hypotheses = BenchmarkHypothesis.objects.filter(benchmark=benchmark).values_list("benchmark_task__task__key", "key")
    instruction_forecasts, probabilities = [], []
    for task, key in hypotheses:
        for model in models:
            probability = round(demo_draw(task, key, model, "probability"), 2)
            probabilities.append({"task": task, "hypothesis": key, "model": model, "probability": probability})
            for instruction in DEMO_INSTRUCTIONS:
                answer = demo_draw(task, key, model, instruction) < probability
                instruction_forecasts.append(
                    {"task": task, "hypothesis": key, "model": model, "instruction": instruction, "answer": answer}
                )
    content = {"instruction_forecasts": instruction_forecasts, "probabilities": probabilities}
    return json.dumps(content, sort_keys=True).encode()


def demo_forecast_tables_import(benchmark: BenchmarkSet) -> None:
    """Import the demonstration's answers under the other instructions into the pooled set; a refusal is logged and
    leaves the set as it was."""
    models = forecasting_models(benchmark.roster) if benchmark.roster else []
    if not models:
        return
    try:
        with transaction.atomic():
            benchmark_import_file(
                benchmark=benchmark,
                filename="demo-forecasts-under-other-instructions.json",
                content=demo_forecast_tables_file(benchmark, models),
                user=benchmark.created_by,
            )
    except ServiceError:
        logger.exception("The demo benchmark set's answers under other instructions could not be imported")


def demo_statements_file(tasks: list[dict], models: list[str], companies: dict[str, str]) -> bytes:
    by_key = {task["key"]: task for task in tasks}
    generator, company = DEMO_STATEMENTS_GENERATOR
    hypotheses, directions = [], []
    for task, *statements in DEMO_STATEMENTS:
        if task not in by_key:
            continue
        for kind, text, label in (("confirmed", *statements[:2]), ("reversed", *statements[2:])):
            key = f"{task}-{kind}"
            confirmed = kind == "confirmed"
            # A demonstration forecaster says yes more often to the published statement than to its reversal.
            chance = 0.7 if confirmed else 0.4
            hypotheses.append(
                {
                    "task": task,
                    "id": key,
                    "generator": generator,
                    "generator_company": company,
                    "statement": text,
                    "selected": False,  # a statement is never selected: the set has no selection
                    "confirmed": confirmed,
                    "forecasts": {model: demo_draw(task, kind, model) < chance for model in models},
                }
            )
            directions.append({"task": task, "hypothesis": key, "direction": label or "unlabelled"})
    content = {
        "tasks": [by_key[task] for task, *_ in DEMO_STATEMENTS if task in by_key],
        "hypotheses": hypotheses,
        "directions": directions,
        "forecasters": [{"model": model, "company": companies[model]} for model in models if model in companies],
    }
    return json.dumps(content, ensure_ascii=False, sort_keys=True).encode()


def demo_statements_set_create(*, tasks: list[dict], roster: Roster, user) -> BenchmarkSet | None:
    """The demo's 50/50 set, once."""
    if BenchmarkSet.objects.filter(name=DEMO_STATEMENTS_NAME).exists():
        return None
    companies = {
        member.endpoint.model_id: member.endpoint.company
        for member in roster.members.select_related("endpoint").filter(role__in=("stage1", "stage2"))
    }
    benchmark = benchmark_create(name=DEMO_STATEMENTS_NAME, description=DEMO_STATEMENTS_DESCRIPTION, user=user)
    benchmark_import_file(
        benchmark=benchmark,
        filename="demo-50-50-statements.json",
        content=demo_statements_file(tasks, sorted(companies), companies),
        user=user,
    )
    return benchmark
