"""Each role's first hour, in a real browser (headless Chromium), on a phone (390 px) with every step also checked on
a desktop (1280 px): nothing runs off the screen and axe-core finds no serious or critical violation at either width.
Screenshots of every step are saved under var/screenshots/<test>/<step>-<width>.png.

- A reviewer finds the queue numbered per cohort, skips to the content, completes one review with the keyboard and
  reads it back, read only.
- A coordinator imports a cohort's proposals, watching the upload's progress and the server's verdict on the file,
  then assigns reviewers, told first that this opens the cohort.
- An analyst downloads Table S and the data bundle and opens every statistics section.
- A visitor starts a run that a real Celery worker does against the simulated model server, reads it as it
  completes, filters it, and is told when they may start another.
"""

import io
import json
import os
import re
import zipfile

import openpyxl
import pytest
from django.urls import reverse

from reviewapp import protocol
from reviewapp.models import Assignment, Cohort, Review
from reviewapp.services.cohorts import cohort_assign, cohort_create
from reviewapp.services.reviews import review_submit
from screening.models import Run
from tests import factories
from tests.benchmark_support import judged_set
from tests.browser_support import PHONE, SCREENSHOTS, assert_page_fits, log_in
from tests.screening_support import celery_on_test_redis, simulated_default_roster, threads_worker

# Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Waiting on a worker's whole run; generous for two shared cores, and only ever a bound: the test goes on as soon as
# the page shows the run completed.
RUN_PATIENCE_MS = 180_000


@pytest.fixture
def phone(page):
    page.set_viewport_size({"width": PHONE, "height": 844})
    return page


def in_viewport(page, selector: str) -> bool:
    return page.eval_on_selector(
        selector, "el => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }"
    )


# ---- The reviewer ----


def test_a_reviewers_first_hour(live_server, phone):
    from playwright.sync_api import expect

    page, test = phone, "reviewer first hour"
    reviewer = factories.make_user("reviewer", username="rev-first")
    task_ = factories.make_task(
        question="Does intermittent rapamycin delay ovarian follicle loss in middle-aged mice?",
        background="The primordial follicle pool declines with age; mTORC1 activity drives follicle activation.",
    )
    first = factories.make_proposal(
        task=task_,
        statement="Intermittent rapamycin preserves the primordial follicle pool in middle-aged female mice.",
        mechanism="Lower mTORC1 signalling in granulosa cells keeps primordial follicles quiescent.",
        investigation_plan="Dose C57BL/6 females weekly from 8 to 12 months; count follicles in serial sections.",
    )
    ovary = factories.make_cohort([first, factories.make_proposal()], name="Ovarian ageing", status="open")
    thymus = factories.make_cohort([factories.make_proposal()], name="Thymic involution", status="open")
    mine = factories.make_assignment(ovary, reviewer, first)
    factories.make_assignment(ovary, reviewer, ovary.proposals.exclude(pk=first.pk).get())
    factories.make_assignment(thymus, reviewer, thymus.proposals.get())

    log_in(page, live_server.url, "rev-first")
    page.wait_for_url(f"{live_server.url}/review/")
    # Each cohort is numbered on its own.
    for cohort, numbers in (("Ovarian ageing", ["1", "2"]), ("Thymic involution", ["1"])):
        group = page.locator("tbody", has=page.locator("tr.cohort-row", has_text=cohort))
        expect(group.locator("td.num")).to_have_text(numbers)
    assert_page_fits(page, test, "queue")

    # The skip link is the first stop of the keyboard and lands in the page's content.
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'content'")

    page.locator("#continue-link").click()
    page.wait_for_url(f"{live_server.url}/review/{mine.pk}/")
    # The first question has the focus, and the research question is still in view: the page did not scroll.
    page.wait_for_function("() => document.activeElement && document.activeElement.name === 'overall'")
    assert page.evaluate("() => window.scrollY") == 0
    assert in_viewport(page, ".question-text")
    assert_page_fits(page, test, "review opened")

    # Every point of every scale is named for a screen reader by its digit, label and anchor.
    for value, label, anchor in protocol.OVERALL_SCALE:
        expect(page.get_by_role("radio", name=f"{value} {label} · {anchor}", exact=True)).to_have_count(1)
    recommendation = page.get_by_role("group", name="Recommendation")
    for n, (_key, label, anchor) in enumerate(protocol.RECOMMENDATIONS, start=1):
        expect(recommendation.get_by_role("radio", name=f"{n} {label} · {anchor}", exact=True)).to_have_count(1)
    verdict = page.get_by_role("group", name="Design-flaw verdict")
    for digit, (_key, label, anchor) in zip("1230", protocol.FLAW_VERDICTS, strict=True):
        expect(verdict.get_by_role("radio", name=f"{digit} {label} · {anchor}", exact=True)).to_have_count(1)
    page.keyboard.press("4")
    page.wait_for_function("() => document.activeElement.name === 'recommendation'")
    page.keyboard.press("2")  # revise
    page.wait_for_function("() => document.activeElement.name === 'importance'")
    for _field, label, _prompt, anchors in protocol.CRITERIA:
        group = page.get_by_role("group", name=label)
        for n, anchor in enumerate(anchors, start=1):
            expect(group.get_by_role("radio", name=f"{n} {anchor}", exact=True)).to_have_count(1)
        expect(group.get_by_role("radio", name=f"0 {protocol.CANT_JUDGE_LABEL}", exact=True)).to_have_count(1)
    for key in "304213":
        page.keyboard.press(key)
    page.wait_for_function("() => document.activeElement.name === 'flaw_verdict'")
    page.keyboard.press("1")  # absent: on to the main flaw
    page.wait_for_function("() => document.activeElement.name === 'main_flaw'")
    page.keyboard.type("Only 6 mice per arm.")
    assert_page_fits(page, test, "review answered")

    page.keyboard.press("Control+Enter")
    expect(page.locator(".messages")).to_contain_text("Review submitted.")
    expect(page.locator(".crumbs")).to_contain_text("Proposal 2 of 2")
    review = Review.objects.get(assignment=mine)
    assert review.status == Review.Status.SUBMITTED and (review.overall, review.recommendation) == (4, "revise")

    # The submitted review opens from the queue, read only: the answers as text, no form.
    page.goto(f"{live_server.url}/review/")
    row = page.locator("tr.status-submitted")
    expect(row).to_contain_text("read only")
    row.get_by_role("link").click()
    page.wait_for_url(f"{live_server.url}/review/{mine.pk}/")
    summary = page.locator(".review-summary")
    expect(summary).to_contain_text("This review is submitted and locked")
    expect(summary.locator(".answer").first).to_contain_text("4 · High priority")
    expect(summary).to_contain_text("Only 6 mice per arm.")
    expect(page.locator("input[type=radio], textarea")).to_have_count(0)
    assert_page_fits(page, test, "review read only")


# ---- The coordinator ----


def big_cohort_file(proposals: int = 90) -> bytes:
    """Two tasks and their proposals, with long investigation plans: about 1.5 MB, an upload that takes a while."""
    plan = "Dose mice weekly from 12 months; measure survival, frailty and autophagy flux in liver and muscle. " * 150
    return json.dumps(
        {
            "tasks": [
                {"key": f"UP-{t}", "question": f"Does pathway {t} shape healthy lifespan in mice?"} for t in (1, 2)
            ],
            "proposals": [
                {
                    "id": f"UP-{n}",
                    "task": f"UP-{1 + n % 2}",
                    "statement": f"Inhibiting kinase {n} in mid-life extends healthy lifespan. It needs autophagy.",
                    "investigation_plan": plan[:15000],
                    "author": "Model Astra",
                }
                for n in range(1, proposals + 1)
            ],
        }
    ).encode()


def test_a_coordinators_first_hour(live_server, phone, tmp_path):
    from playwright.sync_api import expect

    page, test = phone, "coordinator first hour"
    coordinator = factories.make_user("coordinator", username="coord-first")
    for n in range(1, 4):
        factories.make_user("reviewer", username=f"rev-first-{n}")
    cohort = cohort_create(name="Mid-life kinases", reviewers_per_proposal=2, seed=7, user=coordinator)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"proposals": [{"id": "X-1", "task": "NO-SUCH-TASK", "statement": "A claim."}]}))
    upload = tmp_path / "kinases.json"
    upload.write_bytes(big_cohort_file())

    log_in(page, live_server.url, "coord-first")
    page.get_by_role("link", name="Mid-life kinases").click()
    expect(page.locator("#opening-notice")).to_contain_text("freezes its proposals")
    assert_page_fits(page, test, "cohort overview")
    page.get_by_role("link", name="Import proposals").click()
    page.wait_for_url(f"{live_server.url}/cohorts/{cohort.pk}/import/")
    assert_page_fits(page, test, "import page")

    # A file with a problem: the server's verdict replaces the outcome, the page is not reloaded.
    page.evaluate("window.notReloaded = true")
    page.get_by_label("A JSON, CSV or XLSX file").set_input_files(str(broken))
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#import-outcome")).to_contain_text("Nothing was imported.")
    expect(page.locator("#import-outcome")).to_contain_text("NO-SUCH-TASK")
    assert page.evaluate("window.notReloaded") is True
    assert_page_fits(page, test, "import refused")

    # A large file on a slow line: the bar moves while it uploads, then the server's answer comes.
    network = page.context.new_cdp_session(page)
    network.send("Network.enable")
    network.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 250_000},
    )
    page.get_by_label("A JSON, CSV or XLSX file").set_input_files(str(upload))
    page.get_by_role("button", name="Import").click()
    bar = page.locator(".upload-progress progress")
    expect(page.locator(".upload-status")).to_contain_text(re.compile(r"Uploading… [1-9]\d?% "))
    expect(bar).to_have_attribute("value", re.compile(r"^[1-9]\d?$"))
    page.screenshot(path=str(SCREENSHOTS / "coordinator-first-hour" / f"uploading-{PHONE}.png"), full_page=True)
    expect(page.locator("#import-outcome")).to_contain_text("Imported.", timeout=120_000)
    network.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    expect(page.locator(".upload-status")).to_have_text("Done: the server's answer is below.")
    expect(page.locator("#import-outcome")).to_contain_text("90 proposals")
    assert page.evaluate("window.notReloaded") is True
    assert cohort.proposals.count() == 90
    assert_page_fits(page, test, "imported")

    # Assigning: the tab says it will open the cohort, and a confirmation step asks first.
    page.goto(f"{live_server.url}/cohorts/{cohort.pk}/")
    page.evaluate("window.notReloaded = true")
    page.get_by_role("link", name="Reviewers and assignments").click()
    page.wait_for_url(f"{live_server.url}/cohorts/{cohort.pk}/people/")  # the tab's own URL, pushed by htmx
    expect(page.locator("#assign-warning")).to_contain_text("Assigning opens the cohort.")
    assert page.evaluate("window.notReloaded") is True  # only the tab was swapped
    expect(page.locator("#tab-people")).to_have_attribute("aria-current", "page")
    assert_page_fits(page, test, "assign form")
    page.get_by_role("button", name="all", exact=True).click()
    page.get_by_role("button", name="Assign…").click()
    expect(page.get_by_role("heading", name="Open “Mid-life kinases” for review?")).to_be_visible()
    expect(page.locator("#confirm-open")).to_contain_text("nothing more can be imported into it")
    cohort.refresh_from_db()
    assert cohort.status == Cohort.Status.DRAFT and not Assignment.objects.exists()
    assert_page_fits(page, test, "confirm opening")
    page.get_by_role("button", name="Assign and open the cohort").click()
    expect(page.locator(".messages")).to_contain_text("180 assignments created.")
    expect(page.locator(".messages")).to_contain_text("The cohort is open for review.")
    cohort.refresh_from_db()
    assert cohort.status == Cohort.Status.OPEN and Assignment.objects.filter(cohort=cohort).count() == 180
    expect(page.locator("#progress tbody tr")).to_have_count(3)
    assert_page_fits(page, test, "assigned")
    # The summary and the tabs stay at the top of the screen while the long tab scrolls.
    page.locator("#assignments").scroll_into_view_if_needed()
    page.mouse.wheel(0, 3000)
    page.wait_for_function("() => window.scrollY > 1000")
    assert page.eval_on_selector("#summary", "el => Math.round(el.getBoundingClientRect().top)") == 0
    expect(page.locator("#summary")).to_contain_text("180 assignments")

    page.get_by_role("link", name="Proposals", exact=True).click()
    expect(page.locator("#proposals")).to_contain_text("Inhibiting kinase 1 in mid-life extends healthy lifespan.")
    assert_page_fits(page, test, "proposals tab")


# ---- The analyst ----


@pytest.fixture
def analysed(db):
    coordinator = factories.make_user("coordinator", username="coord-analysed")
    benchmark = judged_set()
    proposals = [factories.make_proposal(author=f"Model {n % 2}") for n in range(4)]
    for child, parent in ((proposals[2], proposals[0]), (proposals[3], proposals[1])):
        child.parents.add(parent)
    cohort = factories.make_cohort(proposals, name="Reviewed cohort")
    reviewers = [factories.make_user("reviewer") for _ in range(2)]
    cohort_assign(cohort=cohort, reviewers=reviewers, per_proposal=2, seed=1, user=coordinator)
    for n, assignment in enumerate(Assignment.objects.filter(cohort=cohort).order_by("pk")):
        answers = {
            "overall": 1 + n % 5,
            "recommendation": "revise",
            **{field: str(1 + (n + i) % 4) for i, field in enumerate(protocol.CRITERION_FIELDS)},
            "flaw_verdict": "absent",
        }
        review_submit(assignment=assignment, reviewer=assignment.reviewer, answers=answers, version=0)
    factories.make_user("analyst", username="analyst-first")
    return benchmark, cohort


def test_an_analysts_first_hour(live_server, phone, analysed):
    from playwright.sync_api import expect

    page, test = phone, "analyst first hour"
    benchmark, cohort = analysed
    log_in(page, live_server.url, "analyst-first")
    page.get_by_role("link", name="Benchmarks").click()
    page.get_by_role("link", name="Ageing benchmark").click()
    page.wait_for_url(f"{live_server.url}/benchmarks/{benchmark.pk}/")
    assert_page_fits(page, test, "benchmark set")

    with page.expect_download() as table_s:
        page.get_by_role("link", name="Table S (XLSX)").click()
    with open(table_s.value.path(), "rb") as file:
        workbook = openpyxl.load_workbook(io.BytesIO(file.read()), read_only=True)
    assert workbook.sheetnames
    with page.expect_download() as bundle:
        page.get_by_role("link", name="Published data (ZIP)").click()
    with zipfile.ZipFile(bundle.value.path()) as archive:
        assert archive.namelist() and archive.testzip() is None
    assert table_s.value.suggested_filename.endswith(".xlsx") and bundle.value.suggested_filename.endswith(".zip")

    page.get_by_role("link", name="Statistics").click()
    page.wait_for_url(f"{live_server.url}/benchmarks/{benchmark.pk}/statistics/")
    for section in ("#enrichment", "#judge-votes", "#agreement", "#trimmed-lists", "#human-review"):
        page.locator(section).scroll_into_view_if_needed()
        expect(page.locator(section)).to_be_visible()
    expect(page.locator("#enrichment tbody tr")).to_have_count(3)  # two generators and all of them
    assert_every_plot_drawn(page)
    assert_page_fits(page, test, "benchmark statistics")

    page.locator("#human-review").get_by_role("link", name="Reviewed cohort").click()
    page.wait_for_url(f"{live_server.url}/cohorts/{cohort.pk}/statistics/")
    for section in ("#revisions", "#revision-criteria", "#reviewer-agreement"):
        page.locator(section).scroll_into_view_if_needed()
        expect(page.locator(section)).to_be_visible()
    # Overall, the six criteria, the recommendation and the flaw verdict.
    expect(page.locator("#reviewer-agreement tbody tr")).to_have_count(len(protocol.CRITERIA) + 3)
    assert_every_plot_drawn(page)
    assert_page_fits(page, test, "cohort statistics")


def assert_every_plot_drawn(page):
    images = page.locator("main img")
    assert images.count() > 0
    for n in range(images.count()):
        images.nth(n).scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=images.nth(n).element_handle())


# ---- The public visitor ----


@pytest.fixture
def worker_on_redis(settings, monkeypatch, redis_url, needs_postgres):
    """A real Celery worker (threads) of the project on the test Redis, with the simulated model server over HTTP.
    PostgreSQL, as every real-worker test: the in-memory SQLite test database locks whole tables between threads."""
    with (
        celery_on_test_redis(settings, monkeypatch, redis_url, "first-hour"),
        simulated_default_roster(settings, monkeypatch, latency=0.05, seed=17),
        threads_worker(concurrency=4),
    ):
        yield


def test_a_visitors_first_hour(live_server, phone, worker_on_redis, settings):
    from playwright.sync_api import expect

    page, test = phone, "visitor first hour"
    settings.OPEN_HYPOTHESIS_CLIENT_LIMIT = 1
    page.goto(f"{live_server.url}{reverse('open-hypothesis')}")
    assert_page_fits(page, test, "start page")
    page.get_by_label(re.compile("Research question")).fill(
        "How does remodelling of the bone-marrow niche affect mutant clones?"
    )
    page.get_by_role("button", name="Start the run").click()
    page.wait_for_url(re.compile(r"/open-hypothesis/[0-9a-f-]{36}$"))
    expect(page.locator("#simulated-notice")).to_contain_text("Simulated models")
    assert_page_fits(page, test, "run started")

    # The worker does the run; the page follows it without a reload.
    page.evaluate("window.notReloaded = true")
    expect(page.locator("#run-status")).to_have_text("Completed", timeout=RUN_PATIENCE_MS)
    assert page.evaluate("window.notReloaded") is True
    run = Run.objects.get()
    assert run.status == Run.Status.COMPLETED and run.hypotheses.count() == 40
    delivered = sum(hypothesis.delivered for hypothesis in run.hypotheses.all())
    selected = run.hypotheses.filter(selected=True).count()
    assert 0 < delivered <= selected < 40
    expect(page.locator("#counts")).to_contain_text("Generated 40")

    # Collapsed: each hypothesis is one line with its verdicts; opening one shows the rest.
    first = page.locator("article.hypothesis").first
    expect(first.locator("summary .verdicts")).to_contain_text("stage 1:")
    expect(first.locator("details")).not_to_have_attribute("open", "")
    expect(first.get_by_text("Mechanism:")).to_be_hidden()
    assert_page_fits(page, test, "run completed")
    first.locator("summary").click()
    expect(first.get_by_text("Mechanism:")).to_be_visible()

    # The filters are links: the delivered ones only, then the selected ones.
    filters = page.locator("#run-filters")
    filters.get_by_role("link", name=f"Delivered ({delivered})").click()
    page.wait_for_url(re.compile(r"\?show=delivered$"))
    expect(page.locator("article.hypothesis")).to_have_count(delivered)
    expect(page.locator("#other-hypotheses")).to_have_count(0)
    assert_page_fits(page, test, "delivered only")
    filters = page.locator("#run-filters")
    filters.get_by_role("link", name=f"Selected ({selected})").click()
    page.wait_for_url(re.compile(r"\?show=selected$"))
    expect(page.locator("article.hypothesis")).to_have_count(selected)
    page.reload()  # the filter is in the URL: it works without the page's scripts too
    expect(page.locator("article.hypothesis")).to_have_count(selected)

    with page.expect_download() as download:
        page.get_by_role("link", name="Download JSON").click()
    body = json.loads(open(download.value.path()).read())
    assert body["status"] == "completed" and body["simulated"] is True

    # One run per address here: a second one is refused, and the page says when to try again.
    page.goto(f"{live_server.url}{reverse('open-hypothesis')}")
    page.get_by_label(re.compile("Research question")).fill("Does a second question about clones get a run?")
    page.get_by_role("button", name="Start the run").click()
    expect(page.locator("#retry-at")).to_contain_text(
        re.compile(r"You can start a run again from\s+\d\d:\d\d UTC on \d+ \w+ \d{4},\s+in about")
    )
    assert Run.objects.count() == 1
    assert_page_fits(page, test, "limit reached")
