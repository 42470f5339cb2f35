"""Support for tests of benchmark sets: a set filled through the import service, as coordinators fill one."""

import itertools
import json

from reviewapp.benchmarks.models import BenchmarkSet
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.services.sets import benchmark_create

# Four judges of four companies, in their listed order; each generator shares its company with one of them.
JUDGES = (
    ("Judge Alpha", "Alpha Labs"),
    ("Judge Beta", "Beta AI"),
    ("Judge Gamma", "Gamma Inc"),
    ("Judge Delta", "Delta"),
)
GENERATORS = {"Gen Alpha": "Alpha Labs", "Gen Beta": "Beta AI"}
_numbers = itertools.count(1)


def task(key: str, **fields) -> dict:
    return {
        "key": key,
        "question": f"Does factor {key} change lifespan in aged mice?",
        "reference_statement": f"Raising factor {key} extends median lifespan of aged mice by 10%.",
        **fields,
    }


def hypothesis(task_key: str, hypothesis_id: str, generator: str = "Gen Alpha", **fields) -> dict:
    return {
        "task": task_key,
        "id": hypothesis_id,
        "generator": generator,
        "generator_company": GENERATORS.get(generator, "Other Co"),
        "statement": f"Hypothesis {hypothesis_id} of {task_key}: raising the factor extends lifespan.",
        "mechanism": "It lowers inflammation.",
        "prediction": "Treated mice live longer.",
        "selected": True,
        "forecasts": {"model-a": True, "model-b": True},
        **fields,
    }


def scores(task_key: str, hypothesis_id: str, values, judges=JUDGES) -> list[dict]:
    """Score rows for one hypothesis, one per judge in order; None leaves a judge's score out."""
    return [
        {"task": task_key, "hypothesis": hypothesis_id, "judge": name, "judge_company": company, "score": value}
        for (name, company), value in zip(judges, values, strict=True)
        if value is not None
    ]


def json_file(data: dict) -> bytes:
    return json.dumps(data).encode()


def import_json(benchmark: BenchmarkSet, data: dict, user=None, filename: str = "set.json"):
    return benchmark_import_file(benchmark=benchmark, filename=filename, content=json_file(data), user=user)


def make_set(data: dict | None = None, name: str | None = None, **fields) -> BenchmarkSet:
    name = name or f"Ageing benchmark {next(_numbers)}"
    benchmark = benchmark_create(name=name, seed=fields.pop("seed", 20261026), **fields)
    if data:
        import_json(benchmark, data)
    return benchmark


def judged_set(name: str = "Ageing benchmark"):
    """Two generators over two tasks, each with a selected and an unselected hypothesis, all judged by four judges."""
    return make_set(
        {
            "tasks": [task("T1"), task("T2")],
            "hypotheses": [
                hypothesis("T1", "a1", selected=True, forecasts={"m1": True, "m2": True}),
                hypothesis("T1", "a2", selected=False, forecasts={"m1": True, "m2": False}),
                hypothesis("T2", "a3", generator="Gen Beta", selected=True, forecasts={"m1": True, "m2": True}),
                hypothesis("T2", "a4", generator="Gen Beta", selected=False, forecasts={"m1": False, "m2": True}),
            ],
            "scores": scores("T1", "a1", [0, 4, 4, 1])
            + scores("T1", "a2", [0, 3, 0, 3])
            + scores("T2", "a3", [5, 1, 2, 0])
            + scores("T2", "a4", [1, 0, 0, 0]),
        },
        name=name,
    )
