"""What the panel's services share: their refusals, the roster members they ask, the stored prompts, and doing many
model requests at once within one background job."""

import csv
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.db import connection

from reviewapp.core.errors import ServiceError
from reviewapp.models import BackgroundJob
from reviewapp.panel.level_prompts import LEVEL_PROMPTS
from reviewapp.panel.models import PanelPrompt
from reviewapp.panel.prompts import PROMPTS
from reviewapp.services.jobs import JobResult, exports_dir
from screening.llm import ask_twice, roster_endpoint
from screening.llm.models import ModelCall, ModelEndpoint

Item = TypeVar("Item")


class PanelError(ServiceError):
    code = "invalid_panel_request"


def role_endpoints(roles: Iterable[str]) -> dict[str, ModelEndpoint]:
    """The default roster's endpoint for each role; PanelError (503 not_configured) naming any role without one."""
    endpoints = {role: roster_endpoint(role) for role in roles}
    missing = [role.replace("_", " ") for role, endpoint in endpoints.items() if endpoint is None]
    if missing:
        raise PanelError(
            f"The default roster names no enabled model for: {', '.join(missing)}. Add one in the admin "
            "(Rosters) or run `manage.py setup_roster`.",
            code="not_configured",
            status=503,
        )
    return endpoints  # type: ignore[return-value]


@dataclass(frozen=True)
class Answerer:
    """A roster member as the panel asks it: its endpoint and the stored prompt of its role."""

    endpoint: ModelEndpoint
    prompt: PanelPrompt

    def record(self, call: ModelCall | None) -> dict:
        return {
            "prompt": self.prompt,
            "endpoint": self.endpoint,
            "model_name": self.endpoint.display_name,
            "simulated": self.endpoint.is_simulated or bool(call and call.simulated),
            "model_call": call,
        }


def ask_model(parse, answerer: Answerer, system: str, user: str, purpose: str, schema: dict):
    """(reading or None, the last call, why it failed) of one request with one "ask once more"."""
    readings = []

    def read(text):
        readings.append(parse(text))
        return readings[-1]

    reading, call = ask_twice(
        read, endpoint=answerer.endpoint, system=system, user=user, purpose=purpose, json_schema=schema
    )
    if reading is not None:
        return reading, call, ""
    reasons = readings[-1].problems if readings else []
    error = "; ".join(reasons) or (call.error if call is not None else "") or "no usable reply"
    return None, call, f"No valid reply after asking twice: {error}"[:2000]


def stored_prompt(kind: str) -> PanelPrompt:
    """The stored row of the current prompt of a kind (created the first time it is used)."""
    text = {**PROMPTS, **LEVEL_PROMPTS}[kind]
    prompt, _ = PanelPrompt.objects.get_or_create(
        sha256=text.sha256,
        defaults={"kind": kind, "version": text.version, "system": text.system, "template": text.template},
    )
    return prompt


def concurrency_for(endpoints: Iterable[ModelEndpoint]) -> int:
    """Threads worth running for these endpoints: AI_PANEL_CONCURRENCY, but no more than their slots together (a
    thread beyond them would only wait for a slot)."""
    slots = sum(endpoint.concurrency_limit for endpoint in {endpoint.pk: endpoint for endpoint in endpoints}.values())
    return max(1, min(settings.AI_PANEL_CONCURRENCY, slots))


def run_concurrently(items: list[Item], work: Callable[[Item], None], *, workers: int) -> None:
    """work(item) for every item on up to `workers` threads, each with its own database connection.

    Inside a transaction the work is done in this thread: other threads could not see its uncommitted rows. The
    first exception stops the others taking new items and is raised once every thread has ended."""
    if workers <= 1 or len(items) <= 1 or connection.in_atomic_block:
        for item in items:
            work(item)
        return
    queue = iter(items)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while not errors:
                with lock:
                    item = next(queue, None)
                if item is None:
                    return
                work(item)
        except BaseException as exc:  # handed to the caller below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, name=f"panel-{n}") for n in range(min(workers, len(items)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


class Progress:
    """Thread-safe counting of finished items, reported to the job's page every few items."""

    def __init__(self, report: Callable[[int, int], None], total: int, *, every: int = 10):
        self.report, self.total, self.every = report, total, every
        self.done = self.reported = 0
        self._lock = threading.Lock()
        report(0, total)

    def advance(self, count: int = 1) -> None:
        with self._lock:
            self.done += count
            if self.done - self.reported >= self.every or self.done >= self.total:
                self.reported = self.done
                self.report(self.done, self.total)


def write_table_file(job: BackgroundJob, rows: Iterable[list], *, kind: str, name: str) -> JobResult:
    """A job's result: the rows (header first) as a CSV, written beside its final name and renamed, so a half-written
    file is never offered for download."""
    final = exports_dir() / f"job-{job.pk}-{kind}.csv"
    partial = final.with_name(final.name + ".part")
    with open(partial, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    partial.replace(final)
    return JobResult(path=final, name=name)
