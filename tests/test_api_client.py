"""A client generated from /api/v1/schema by openapi-python-client, used as generated: no patch, no configuration.

It drives the API over real HTTP (the live server) as a user scripting the product would: a cohort from its creation
through the import of its proposals, the assignment, the progress and both downloads; a public run to completion;
a benchmark set from its creation, unstarted, to its statistics. Every answer is read by the client's own models, so
an answer the schema does not describe (a null it does not allow, a file declared as text) fails here.
"""

import importlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from reviewapp.benchmarks.models import BenchmarkSet
from screening.models import Run
from tests import factories
from tests.benchmarks.test_appendix_analyses import study_data
from tests.screening_support import drive

IMPORTS = Path(__file__).parent / "fixtures" / "imports"
PASSWORD = "pw-for-tests-1"  # tests.factories.make_user
QUESTION = "Which interventions extend healthy lifespan in mammals by raising NAD+ levels?"


@pytest.fixture(scope="module")
def oh_client(tmp_path_factory, django_db_blocker):
    """The package openapi-python-client generates from the schema, imported as `oh_client`."""
    folder = tmp_path_factory.mktemp("generated")
    schema = folder / "schema.json"
    with django_db_blocker.unblock():
        call_command("spectacular", "--format", "openapi-json", "--file", str(schema))
    generator = Path(sys.executable).parent / "openapi-python-client"
    # The generator formats its output with ruff, found on PATH (the virtualenv's own).
    environment = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    done = subprocess.run(
        [
            str(generator),
            "generate",
            "--path",
            str(schema),
            "--meta",
            "none",
            "--output-path",
            str(folder / "oh_client"),
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Any operation or answer the generator could not read is left out of the client with a warning.
    assert "WARNING" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("oh_client")
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name == "oh_client" or name.startswith("oh_client.")]:
            del sys.modules[name]
        shutil.rmtree(folder, ignore_errors=True)


def _signed_in(oh_client, base_url: str, username: str):
    from oh_client import AuthenticatedClient, Client
    from oh_client.api.auth import token_create
    from oh_client.models import TokenCreateInputRequest

    answer = token_create.sync(
        client=Client(base_url=base_url), body=TokenCreateInputRequest(username=username, password=PASSWORD)
    )
    assert answer is not None and answer.token, answer
    return AuthenticatedClient(base_url=base_url, token=answer.token, prefix="Token", timeout=60)


def test_a_generated_client_drives_a_cohort_from_creation_to_its_downloads(oh_client, live_server, transactional_db):
    from oh_client.api.cohorts import (
        cohort_assign,
        cohort_create,
        cohort_detail,
        cohort_import,
        cohort_list,
        cohort_progress,
        cohort_reviews_csv,
        cohort_reviews_xlsx,
    )
    from oh_client.models import CohortAssignInputRequest, CohortCreateInputRequest, Error, ImportFileInputRequest
    from oh_client.types import File

    coordinator = factories.make_user("coordinator", username="coord-gen")
    reviewers = [factories.make_user("reviewer", username=f"rev-gen-{n}") for n in range(3)]
    api = _signed_in(oh_client, live_server.url, coordinator.username)

    created = cohort_create.sync(client=api, body=CohortCreateInputRequest(name="Generated client", seed=7))
    assert created.status == "draft" and created.proposal_count == 0
    again = cohort_create.sync(client=api, body=CohortCreateInputRequest(name="Generated client"))
    assert isinstance(again, Error) and again.error.value == "cohort_name_taken"

    upload = File(payload=io.BytesIO((IMPORTS / "cohort.json").read_bytes()), file_name="cohort.json")
    imported = cohort_import.sync(created.id, client=api, body=ImportFileInputRequest(file=upload))
    assert (imported.tasks, imported.proposals) == (2, 4)

    assigned = cohort_assign.sync(
        created.id,
        client=api,
        body=CohortAssignInputRequest(per_proposal=2, reviewers=[r.username for r in reviewers], seed=3),
    )
    assert assigned.created == 8 and sum(assigned.loads.additional_properties.values()) == 8

    progress = cohort_progress.sync(created.id, client=api)
    assert (progress.totals.assigned, progress.totals.submitted, progress.totals.proposals) == (8, 0, 4)
    assert {row.username for row in progress.reviewers} == {r.username for r in reviewers}
    assert cohort_detail.sync(created.id, client=api).status == "open"
    listed = cohort_list.sync(client=api, limit=10)
    assert listed.count == 1 and listed.results[0].name == "Generated client"

    table = cohort_reviews_csv.sync(created.id, client=api)
    assert isinstance(table, str) and table.splitlines()[0].startswith("cohort")
    workbook = cohort_reviews_xlsx.sync(created.id, client=api)
    assert workbook.payload.read(2) == b"PK"  # an XLSX file is a ZIP archive


def test_a_generated_client_starts_a_public_run_and_reads_it_to_completion(
    oh_client, live_server, transactional_db, roster, memory_broker
):
    from oh_client import Client
    from oh_client.api.open_hypothesis import run_create, run_detail
    from oh_client.models import RunCreateInputRequest

    public = Client(base_url=live_server.url, timeout=60)
    started = run_create.sync(client=public, body=RunCreateInputRequest(question=QUESTION))
    assert started.status == "queued"
    waiting = run_detail.sync(str(started.id), client=public)
    assert waiting.status == "queued" and waiting.hypotheses == []

    # The workers' part, done here one item at a time (tests.screening_support.drive).
    drive(Run.objects.get(public_id=started.id))
    finished = run_detail.sync(str(started.id), client=public)
    assert finished.status == "completed"
    assert finished.counts.generated == 12 and len(finished.hypotheses) == 12
    steps = (finished.steps.generate, finished.steps.stage1, finished.steps.stage2, finished.steps.novelty)
    assert {step.value for step in steps} == {"completed"}


def test_a_generated_client_drives_a_benchmark_set_from_creation_to_statistics(
    oh_client, live_server, transactional_db
):
    from oh_client.api.benchmarks import (
        benchmark_create,
        benchmark_detail,
        benchmark_import,
        benchmark_list,
        statistics,
    )
    from oh_client.models import BenchmarkCreateInputRequest, BenchmarkImportInputRequest, BenchmarkStatistics
    from oh_client.types import File

    coordinator = factories.make_user("coordinator", username="coord-bench")
    api = _signed_in(oh_client, live_server.url, coordinator.username)

    created = benchmark_create.sync(client=api, body=BenchmarkCreateInputRequest(name="Generated set", seed=11))
    assert created.started_at is None and created.roster is None
    assert benchmark_list.sync(client=api).results[0].started_at is None
    unstarted = benchmark_detail.sync(created.id, client=api)
    assert unstarted.started_at is None and unstarted.task_count == 0

    content = json.dumps(study_data()).encode()
    upload = File(payload=io.BytesIO(content), file_name="study.json")
    imported = benchmark_import.sync(created.id, client=api, body=BenchmarkImportInputRequest(file=upload))
    assert imported.new_tasks > 0 and imported.new_hypotheses > 0

    answer = statistics.sync(created.id, client=api)
    assert isinstance(answer, BenchmarkStatistics), answer
    assert answer.hypotheses == 80 and answer.generators[-1].primary.precision.value is not None
    dimensions = answer.study.originality.comparison.dimensions
    assert {dimension.dimension for dimension in dimensions} == {"originality", "feasibility", "clarity"}
    assert answer.study.task_selection.check.exclusion_reasons[0].records == 3
    assert BenchmarkSet.objects.get(pk=created.id).hypotheses.exists()
