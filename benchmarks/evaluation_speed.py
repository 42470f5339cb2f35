"""Speed of the levels above a single hypothesis: path selection and the evaluation summary of a cohort of 2,000
versions in 200 research runs, against the targets the product promises.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/evaluation_speed.py

Needs PostgreSQL: it creates a scratch database on that server (oh_bench_evaluation and a random suffix) and drops it
at the end. The cohort is imported as coordinators import one: 200 named runs of 10 versions each (a chain with a
branch and a crossover in every run), a budget on half of them, three decisions and delivery records per run; every
path and run holds an assessment and every edge a revision judgment, as after the AI panel.

Measured, each the median of interleaved repeats beside its floor (reading the same rows: the proposals, parent
links, assessments, judgments and delivery records the figure reads, as plain `values_list` queries):

- path selection (`reviewapp.panel.research.cohort_tree`: the tree, runs as given or as components, one path per
  terminal), target ≤ 1 s;
- the evaluation summary (`GET /api/v1/cohorts/{id}/evaluation`'s body without the hypothesis panel: the five
  levels, overall and per author model), target ≤ 1 s;
- the same summary as a user would compute it instead: a query per run for its versions and per version for its
  parents (for reference, against the same floor).

Exit status 1 when a target is missed.
"""

import argparse
import json
import os
import sys
import time

from support import Results, interleaved, postgres_server, scratch_database, setup_django

RUNS, PER_RUN = 200, 10
REPEATS = 5
TARGET_SECONDS = 1.0


def build_cohort():
    """A cohort of RUNS × PER_RUN versions through the import, with assessments and judgments stored as the panel
    stores them."""
    from reviewapp.models import Proposal
    from reviewapp.panel.development import PATH_RUBRIC, RUN_RUBRIC, rubric
    from reviewapp.panel.models import Assessment, PanelSubject, RevisionJudgment
    from reviewapp.panel.research import cohort_tree
    from reviewapp.services.cohorts import cohort_create
    from reviewapp.services.imports import cohort_import_file

    tasks = [{"key": f"bench-T{n}", "question": f"Does pathway {n} change healthy lifespan?"} for n in range(20)]
    runs, proposals, decisions, delivery = [], [], [], []
    for run in range(RUNS):
        run_id, task, author = f"bench-run-{run:03d}", f"bench-T{run % 20}", f"model-{run % 7}"
        runs.append(
            {"id": run_id, "task": task, "author": author, **({"budget": 10, "budget_unit": "h"} if run % 2 else {})}
        )
        ids = [f"bench-r{run:03d}-v{n:02d}" for n in range(PER_RUN)]
        for n, version in enumerate(ids):
            # A chain v00 → v01 → …, v05 branching from v02, v07 a crossover of v06 and v04.
            parents = [] if n == 0 else [ids[2]] if n == 5 else [ids[6], ids[4]] if n == 7 else [ids[n - 1]]
            proposals.append(
                {
                    "id": version,
                    "task": task,
                    "statement": f"Raising factor {run}-{n} in muscle delays frailty in ageing mice.",
                    "author": author,
                    "research_run": run_id,
                    "parents": parents,
                }
            )
        decisions += [
            {"run": run_id, "seq": 1, "kind": "pursue", "proposals": [ids[0]]},
            {"run": run_id, "seq": 2, "kind": "branch", "proposals": [ids[5]], "budget": 2},
            {"run": run_id, "seq": 3, "kind": "stop", "proposals": [ids[-1]]},
        ]
        delivery += [
            {"proposal": ids[-1], "stage": "selected", "status": "passed"},
            {"proposal": ids[-1], "stage": "compiled", "status": "unattempted"},
        ]
    cohort = cohort_create(name="Evaluation speed", user=None)
    content = {
        "tasks": tasks,
        "research_runs": runs,
        "proposals": proposals,
        "decisions": decisions,
        "delivery": delivery,
    }
    cohort_import_file(cohort=cohort, filename="bench.json", content=json.dumps(content).encode(), user=None)

    tree = cohort_tree(cohort)
    path_scores = dict.fromkeys(rubric(PATH_RUBRIC).keys, 3)
    run_scores = dict.fromkeys(rubric(RUN_RUBRIC).keys, 2)
    Assessment.objects.bulk_create(
        [
            Assessment(
                cohort=cohort,
                level="path",
                object_key=path.terminal,
                proposals=list(path.proposals),
                rubric=PATH_RUBRIC,
                state="done",
                scores=path_scores,
            )
            for path in tree.paths
        ]
        + [
            Assessment(
                cohort=cohort,
                level="run",
                object_key=run_id,
                proposals=run.proposals,
                rubric=RUN_RUBRIC,
                state="done",
                scores=run_scores,
            )
            for run_id, run in tree.runs.items()
        ]
    )
    pks = list(cohort.proposals.values_list("pk", flat=True))
    PanelSubject.objects.bulk_create([PanelSubject(proposal_id=pk) for pk in pks])
    subjects = dict(PanelSubject.objects.filter(proposal__in=pks).values_list("proposal_id", "pk"))
    links = Proposal.parents.through.objects.filter(from_proposal__in=pks).values_list(
        "from_proposal_id", "to_proposal_id"
    )
    RevisionJudgment.objects.bulk_create(
        [
            RevisionJudgment(
                subject_id=subjects[child], predecessor_id=parent, state="done", category="substantive_progress"
            )
            for child, parent in links
        ]
    )
    return cohort, len(tree.paths)


def read_rows(cohort) -> None:
    """The floor: the rows both figures read, fetched as plain tuples."""
    from reviewapp.models import DeliveryRecord, Proposal
    from reviewapp.panel.models import Assessment, RevisionJudgment

    list(cohort.proposals.values_list("pk", "external_id", "task__key", "author", "research_run__external_id"))
    list(Proposal.parents.through.objects.filter(from_proposal__cohorts=cohort).values_list("pk", "to_proposal_id"))
    list(Assessment.objects.filter(cohort=cohort).values_list("level", "object_key", "proposals", "scores"))
    list(RevisionJudgment.objects.filter(subject__proposal__cohorts=cohort).values_list("predecessor_id", "category"))
    list(DeliveryRecord.objects.filter(proposal__cohorts=cohort).values_list("proposal_id", "stage", "status"))


def summary(cohort) -> dict:
    """The evaluation summary as the API computes it, without the hypothesis level's panel profiles (measured by
    the panel's own benchmark)."""
    from reviewapp.panel import research

    levels = research.cohort_levels(cohort)
    authors = sorted({version.author for version in levels.tree.versions.values()})
    return {
        **research.levels_summary(levels, {}),
        "by_author": [research.levels_summary(levels, {}, author=author) for author in authors],
    }


def naive_paths(cohort) -> int:
    """What a user might write instead: the runs' versions one query per run, each version's parents one query
    each, then the same walk."""
    from reviewapp.analysis.research_tree import Version, run_of, select_paths
    from reviewapp.models import Proposal, ResearchRun

    count = 0
    for run in ResearchRun.objects.filter(proposals__cohorts=cohort).distinct():
        versions = []
        for proposal in Proposal.objects.filter(research_run=run, cohorts=cohort).select_related("task"):
            parents = tuple(proposal.parents.order_by("external_id").values_list("external_id", flat=True))
            versions.append(Version(proposal.external_id, proposal.task.key, proposal.author, run.external_id, parents))
        count += len(select_paths(versions, run_of(versions)))
    return count


def run() -> int:
    from django.core.management import call_command

    from reviewapp.panel.research import cohort_tree

    print("Migrating the scratch database…", flush=True)
    call_command("migrate", verbosity=0)
    print(f"Building a cohort of {RUNS * PER_RUN} versions in {RUNS} runs…", flush=True)
    started = time.perf_counter()
    cohort, paths = build_cohort()
    print(f"  built in {time.perf_counter() - started:.1f} s: {paths} paths", flush=True)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    results = Results()
    tree_seconds, floor_seconds = interleaved(lambda: cohort_tree(cohort), lambda: read_rows(cohort), REPEATS)
    results.ratio(
        "path selection, 2,000 versions / 200 runs",
        tree_seconds,
        floor_seconds,
        "s",
        None,
        floor_name="reading the rows",
    )
    median = sorted(tree_seconds)[len(tree_seconds) // 2]
    results.record("path selection (median)", median, "s", "≤ 1 s", median <= TARGET_SECONDS)
    summary_seconds, floor_seconds = interleaved(lambda: summary(cohort), lambda: read_rows(cohort), REPEATS)
    results.ratio("evaluation summary", summary_seconds, floor_seconds, "s", None, floor_name="reading the rows")
    median = sorted(summary_seconds)[len(summary_seconds) // 2]
    results.record("evaluation summary (median)", median, "s", "≤ 1 s", median <= TARGET_SECONDS)
    naive_seconds, floor_seconds = interleaved(lambda: naive_paths(cohort), lambda: read_rows(cohort), 1)
    results.ratio(
        "path selection as a user would write it (query per run and version)",
        naive_seconds,
        floor_seconds,
        "s",
        None,
        floor_name="reading the rows",
    )
    return results.report(__file__)


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    url = postgres_server()
    if url is None:
        return 2
    with scratch_database(url, "oh_bench_evaluation") as database_url:
        os.environ.setdefault("OH_VAR_DIR", "/tmp")
        setup_django(database_url)
        return run()


if __name__ == "__main__":
    sys.exit(main())
