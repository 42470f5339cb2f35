"""The project's settings with `floor_urls` as the URL configuration (the floors beside the project's views) and the
templates of its plain views (benchmarks/templates)."""

from reviewapp.settings import *  # noqa: F403

ROOT_URLCONF = "floor_urls"
TEMPLATES[0]["DIRS"] = [*TEMPLATES[0]["DIRS"], BASE_DIR / "benchmarks" / "templates"]  # noqa: F405
