"""The project's settings with `floor_urls` as the URL configuration (the floors beside the project's views)."""

from reviewapp.settings import *  # noqa: F403

ROOT_URLCONF = "floor_urls"
