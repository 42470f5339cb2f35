"""Load test with locust: 300 reviewers autosaving drafts and 100 public clients polling runs, at once.

Needs PostgreSQL and the development requirements (locust). On the server named by DATABASE_URL it creates a scratch
database (OH_BENCH_DATABASE, default oh_bench_load, and a random suffix), loads 300 reviewers with an assignment each,
a running and a completed Open Hypothesis run, starts gunicorn (GUNICORN_WORKERS sync workers, 4 by default) on a free
port and runs locust headless for LOAD_SECONDS (60) with all 400 users. It prints the error rate and the latency
percentiles of the autosaves and of the polls next to their targets, and exits 1 when one is missed.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/load_test.py [--keep]
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from support import (
    BIN,
    ROOT,
    Processes,
    Results,
    free_port,
    scratch_arguments,
    scratch_database,
    setup_django,
    wait_for_port,
)

SCRATCH_DATABASE = os.environ.get("OH_BENCH_DATABASE", "oh_bench_load")
# The load; LOAD_REVIEWERS and LOAD_CLIENTS scale it (e.g. to find what one machine sustains).
REVIEWERS = int(os.environ.get("LOAD_REVIEWERS", "300"))
CLIENTS = int(os.environ.get("LOAD_CLIENTS", "100"))
LOAD_SECONDS = int(os.environ.get("LOAD_SECONDS", "60"))
GUNICORN_WORKERS = int(os.environ.get("GUNICORN_WORKERS", "4"))
# Targets on the project's reference machine (2 cores shared by the server, PostgreSQL and locust itself).
TARGETS = {"errors": 0.1, "autosave p95": 1000, "poll p95": 500}  # per cent, ms, ms


def load_data(plan_path: Path) -> None:
    """Reviewers with one assignment each and their sessions; a running and a completed run."""
    from django.contrib.auth.models import Group, User
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command
    from django.utils import timezone

    from reviewapp.models import Assignment, Cohort, Proposal, ResearchTask
    from screening.models import Hypothesis, Run

    print("Migrating and loading the scratch database…", flush=True)
    call_command("migrate", verbosity=0)
    research_task = ResearchTask.objects.create(key="LOAD-1", question="Does the niche shape clones?")
    proposals = Proposal.objects.bulk_create(
        [
            Proposal(task=research_task, external_id=f"L-{n}", statement=f"Statement {n}.", content_sha256=f"{n:064}")
            for n in range(REVIEWERS)
        ]
    )
    cohort = Cohort.objects.create(name="Load", status=Cohort.Status.OPEN)
    cohort.proposals.add(*proposals)
    group = Group.objects.get(name="reviewer")
    plan = {"reviewers": [], "runs": [], "reviewer_weight": REVIEWERS, "client_weight": CLIENTS}
    for number, proposal in enumerate(proposals):
        user = User.objects.create(username=f"load-reviewer-{number}")
        user.groups.add(group)
        assignment = Assignment.objects.create(cohort=cohort, reviewer=user, proposal=proposal, position=1)
        session = SessionStore()
        session["_auth_user_id"], session["_auth_user_backend"] = (
            str(user.pk),
            "django.contrib.auth.backends.ModelBackend",
        )
        session["_auth_user_hash"] = user.get_session_auth_hash()
        session.create()
        plan["reviewers"].append({"session": session.session_key, "assignment": assignment.pk})
    for status in (Run.Status.COMPLETED, Run.Status.SCREENING_STAGE2):
        run = Run.objects.create(
            question="How does the niche shape clonal fitness?", shuffle_seed=1, status=status, public=True
        )
        Hypothesis.objects.bulk_create(
            [
                Hypothesis(
                    run=run, source="client", source_index=n, label=f"H{n}", position=n, statement=f"Hypothesis {n}."
                )
                for n in range(1, 41)
            ]
        )
        run.finished_at = timezone.now() if status == Run.Status.COMPLETED else None
        run.save(update_fields=["finished_at"])
        plan["runs"].append(str(run.public_id))
    plan_path.write_text(json.dumps(plan))


def warm_up(port: int, plan: dict) -> None:
    """A few requests per gunicorn worker first, as a server that has been up a while has had: every worker imports,
    connects and compiles its templates before the load begins."""
    from urllib.request import Request, urlopen

    for reviewer in plan["reviewers"][: 4 * GUNICORN_WORKERS]:
        page = Request(f"http://127.0.0.1:{port}/review/{reviewer['assignment']}/")
        page.add_header("Cookie", f"sessionid={reviewer['session']}")
        urlopen(page, timeout=60).read()
    for run in plan["runs"] * 2 * GUNICORN_WORKERS:
        urlopen(f"http://127.0.0.1:{port}/api/v1/open-hypothesis/runs/{run}", timeout=60).read()


def percentile_row(stats_csv: Path, name: str) -> dict | None:
    with stats_csv.open() as handle:
        return next((row for row in csv.DictReader(handle) if row["Name"] == name), None)


def measure(processes: Processes, record, env: dict, folder: Path) -> None:
    plan = folder / "plan.json"
    load_data(plan)
    port = free_port()
    processes.start(
        "gunicorn",
        [str(BIN / "gunicorn"), "reviewapp.wsgi:application", "--workers", str(GUNICORN_WORKERS),
         "--bind", f"127.0.0.1:{port}", "--log-level", "warning", "--backlog", "2048"],
    )  # fmt: skip
    wait_for_port(port)
    warm_up(port, json.loads(plan.read_text()))
    print(f"locust: {REVIEWERS} reviewers and {CLIENTS} clients for {LOAD_SECONDS} s…", flush=True)
    subprocess.run(
        [str(BIN / "locust"), "-f", str(ROOT / "benchmarks" / "load_locustfile.py"), "--headless",
         "--users", str(REVIEWERS + CLIENTS), "--spawn-rate", "50", "--run-time", f"{LOAD_SECONDS}s",
         "--host", f"http://127.0.0.1:{port}", "--csv", str(folder / "load"), "--only-summary",
         "--loglevel", "WARNING", "--exit-code-on-error", "0"],
        cwd=ROOT, env={**env, "OH_LOAD_PLAN": str(plan)}, check=True,
    )  # fmt: skip
    processes.stop("gunicorn")
    stats = folder / "load_stats.csv"
    total = percentile_row(stats, "Aggregated") or {"Request Count": "0", "Failure Count": "0"}
    requests, failures = int(total["Request Count"]), int(total["Failure Count"])
    error_rate = 100 * failures / max(requests, 1)
    record(
        "error rate",
        error_rate,
        "%",
        f"≤ {TARGETS['errors']} %",
        error_rate <= TARGETS["errors"],
        f"({failures} of {requests} requests)",
    )
    for name, target in (("autosave", "autosave p95"), ("poll run", "poll p95")):
        row = percentile_row(stats, name)
        if row is None:
            record(f"{name} p95", "none", "", f"≤ {TARGETS[target]} ms", False, "(no request finished)")
            continue
        p95 = float(row["95%"])
        record(
            f"{name} p95",
            p95,
            "ms",
            f"≤ {TARGETS[target]} ms",
            p95 <= TARGETS[target],
            f"(p50 {row['50%']}, p90 {row['90%']}, p99 {row['99%']}, max {float(row['Max Response Time']):.0f} ms; "
            f"{row['Request Count']} requests, {float(row['Requests/s']):.1f}/s, {row['Failure Count']} failed)",
        )


def main() -> int:
    command_line = scratch_arguments(__doc__, SCRATCH_DATABASE)
    if command_line is None:
        return 2
    url, keep = command_line
    results = Results()
    with scratch_database(url, SCRATCH_DATABASE, keep=keep) as scratch_url:
        env = {
            **os.environ,
            "DATABASE_URL": scratch_url,
            "DATABASE_CONN_MAX_AGE": "600",  # persistent connections, as production runs them
            "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
            "LOG_LEVEL": "WARNING",
            "CELERY_TASK_ALWAYS_EAGER": "false",
            # Every simulated client polls from this machine's one address: the per-address throttle would refuse most.
            "OH_ANONYMOUS_POLLS_PER_MINUTE": "100000000",
        }
        os.environ.update(env)
        processes = Processes(env)
        try:
            setup_django()
            with tempfile.TemporaryDirectory() as folder:
                measure(processes, results.record, env, Path(folder))
        finally:
            processes.stop_all()
    return results.report(__file__)


if __name__ == "__main__":
    sys.exit(main())
