"""The locust users of benchmarks/load_test.py (run by it; not a benchmark on its own).

Reviewers autosave drafts as the review page does (htmx POST of the form with its version, a few seconds apart) and
public clients poll Open Hypothesis runs. The sessions, assignments and run ids come from the JSON file named by
OH_LOAD_PLAN, written by load_test.py.
"""

import itertools
import json
import os
import random
import re

from locust import HttpUser, between, task

PLAN = json.loads(open(os.environ["OH_LOAD_PLAN"]).read())  # noqa: SIM115 (read once at import)
_REVIEWERS = itertools.cycle(PLAN["reviewers"])
_VERSION = re.compile(r'id="review-version" value="(\d+)"')


class Reviewer(HttpUser):
    weight = PLAN["reviewer_weight"]
    # The page saves about a second after the reviewer stops typing: a save every few seconds while one writes, a
    # pause while one reads.
    wait_time = between(3, 12)

    def on_start(self):
        reviewer = next(_REVIEWERS)
        self.client.cookies.set("sessionid", reviewer["session"])
        self.assignment = reviewer["assignment"]
        page = self.client.get(f"/review/{self.assignment}/", name="review page")
        self.version = int(_VERSION.search(page.text).group(1))

    @task
    def autosave(self):
        headers = {"HX-Request": "true", "X-CSRFToken": self.client.cookies.get("csrftoken", "")}
        answers = {"overall": str(random.randint(1, 5)), "comments": f"Draft note {random.random():.6f}"}
        with self.client.post(
            f"/review/{self.assignment}/",
            {"action": "save", "version": self.version, **answers},
            headers=headers,
            name="autosave",
            catch_response=True,
        ) as response:
            match = _VERSION.search(response.text or "")
            if response.status_code == 200 and match:
                self.version = int(match.group(1))
                response.success()
            else:
                response.failure(f"HTTP {response.status_code}: {response.text[:120]!r}")


class PublicClient(HttpUser):
    weight = PLAN["client_weight"]
    wait_time = between(5, 15)  # more often than the 15 s the API asks for

    @task
    def poll(self):
        run = random.choice(PLAN["runs"])
        self.client.get(f"/api/v1/open-hypothesis/runs/{run}", name="poll run")
