"""Support for browser tests of whole pages: each page checked at a phone's and a desktop's width (nothing wider than
the screen, no serious or critical axe-core violation) with a screenshot of each step under var/screenshots/.

axe-core is the vendored copy in static/vendor/, loaded into the page from the site itself: the Content-Security-Policy
allows scripts from the site's own origin only, and it is not relaxed for the check.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.templatetags.static import static

SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
PHONE, DESKTOP = 390, 1280
WIDTHS = (PHONE, DESKTOP)
HEIGHTS = {PHONE: 844, DESKTOP: 900}
AXE = "vendor/axe-4.14.1.min.js"
BLOCKING_IMPACTS = ("serious", "critical")
PASSWORD = "pw-for-tests-1"  # tests.factories.make_user's


@dataclass(frozen=True)
class Violation:
    rule: str
    impact: str
    help: str
    targets: tuple[str, ...]
    summary: str

    def __str__(self) -> str:
        return f"{self.impact} {self.rule} ({self.help}) at {', '.join(self.targets[:4])}: {self.summary}"


def settle(page) -> None:
    """Wait for the page's own scripts to react to a load or a resize (two animation frames) and for its fonts."""
    page.wait_for_load_state("load")
    page.evaluate(
        "() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))))"
    )


def axe_violations(page) -> list[Violation]:
    """Serious and critical axe-core violations of the page as it is now."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        origin = page.evaluate("() => location.origin")
        page.add_script_tag(url=origin + static(AXE))
    results = page.evaluate(
        """() => axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({
            rule: v.id, impact: v.impact, help: v.help,
            targets: v.nodes.map(n => n.target.join(" ")),
            summary: (v.nodes[0] && v.nodes[0].failureSummary || "").replace(/\\s+/g, " "),
        })))"""
    )
    return [
        Violation(r["rule"], r["impact"], r["help"], tuple(r["targets"]), r["summary"])
        for r in results
        if r["impact"] in BLOCKING_IMPACTS
    ]


def overflow(page) -> dict | None:
    """None when the page is no wider than the window; else its width and the elements that stick out."""
    return page.evaluate(
        """() => {
            const width = document.documentElement.scrollWidth, inner = window.innerWidth;
            if (width <= inner) return null;
            const wide = [];
            for (const el of document.body.querySelectorAll("*")) {
                const box = el.getBoundingClientRect();
                if (box.right > inner + 1 && !el.closest(".table-scroll")) {
                    const classes = typeof el.className === "string" && el.className ? "." + el.className : "";
                    const id = el.id ? "#" + el.id : "";
                    wide.push(el.tagName.toLowerCase() + id + classes + " right=" + Math.round(box.right));
                }
            }
            return {width, inner, wide: wide.slice(0, 12)};
        }"""
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def check_page(page, test: str, step: str, *, widths=WIDTHS) -> list[str]:
    """Check the page at each width: no horizontal overflow, no serious or critical axe violation; a full-page
    screenshot of each. Returns the problems found (empty when the page is fine), the viewport restored."""
    before = page.viewport_size
    problems = []
    folder = SCREENSHOTS / _slug(test)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for width in widths:
            page.set_viewport_size({"width": width, "height": HEIGHTS[width]})
            settle(page)
            where = f"{step} at {width} px ({page.url})"
            wide = overflow(page)
            if wide:
                problems.append(f"{where}: {wide['width']} px wide in a {wide['inner']} px window: {wide['wide']}")
            problems.extend(f"{where}: {violation}" for violation in axe_violations(page))
            page.screenshot(path=str(folder / f"{_slug(step)}-{width}.png"), full_page=True)
    finally:
        page.set_viewport_size(before)
        settle(page)
    return problems


def assert_page_fits(page, test: str, step: str, *, widths=WIDTHS) -> None:
    problems = check_page(page, test, step, widths=widths)
    assert not problems, "\n".join(problems)


def log_in(page, base_url: str, username: str, *, next_path: str = "") -> None:
    """Log in through the login form, as a person does."""
    page.goto(f"{base_url}/accounts/login/" + (f"?next={next_path}" if next_path else ""))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
