"""A benchmark figure is drawn once per computation of the statistics: its bytes are cached under the statistics' key
(the set, its data's version, resamples and seeds), so a change of data or of a seed draws it afresh."""

import json

import pytest
from django.core.cache import cache

from reviewapp.benchmarks.selectors import benchmark_statistics
from reviewapp.benchmarks.services.imports import benchmark_import_file
from reviewapp.benchmarks.statistics import statistics_key
from tests import factories
from tests.benchmark_support import hypothesis, judged_set, scores


def figure_key(statistics, figure: str) -> str:
    key = statistics_key(
        statistics.benchmark_id, statistics.design, statistics.data_version, statistics.resamples, statistics.seeds
    )
    return f"benchmark-figure:{key}:{figure}"


@pytest.fixture
def analyst_client(db, client):
    client.force_login(factories.make_user("analyst"))
    return client


def test_a_figure_is_kept_under_its_statistics_key_and_drawn_afresh_after_a_change(analyst_client):
    cache.clear()
    benchmark = judged_set()
    url = f"/benchmarks/{benchmark.pk}/figures/enrichment.png"
    first = analyst_client.get(url)
    assert first.status_code == 200 and first["Content-Type"] == "image/png"
    statistics = benchmark_statistics(benchmark)
    assert cache.get(figure_key(statistics, "enrichment.png")) == first.content
    assert analyst_client.get(url).content == first.content

    # Another seed is another computation: its figure has its own entry.
    other = analyst_client.get(url + "?seed_selection=7")
    assert other.status_code == 200
    seeded = benchmark_statistics(benchmark, seeds={"selection": 7})
    assert cache.get(figure_key(seeded, "enrichment.png")) == other.content

    # New data give the statistics a new version, so the figure is drawn from them, not served from before.
    more = {
        "hypotheses": [hypothesis("T1", "a5", selected=False, forecasts={"m1": False, "m2": True})],
        "scores": scores("T1", "a5", [0, 3, 3, 3]),
    }
    benchmark_import_file(benchmark=benchmark, filename="more.json", content=json.dumps(more).encode(), user=None)
    changed = benchmark_statistics(benchmark)
    assert changed.data_version != statistics.data_version
    assert cache.get(figure_key(changed, "enrichment.png")) is None
    analyst_client.get(url)
    assert cache.get(figure_key(changed, "enrichment.png")) is not None


def test_the_page_names_its_data_version_and_a_figure_of_that_version_is_served_as_drawn(analyst_client):
    cache.clear()
    benchmark = judged_set()
    page = analyst_client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    statistics = benchmark_statistics(benchmark)
    url = f"/benchmarks/{benchmark.pk}/figures/enrichment.png?v={statistics.data_version}"
    assert f'src="{url}"' in page
    drawn = analyst_client.get(url).content
    assert cache.get(figure_key(statistics, "enrichment.png")) == drawn
    # The file kept for that version is what the URL gets, even after the data changed; the page then names the new
    # version, whose figure is drawn from the new data.
    more = {
        "hypotheses": [hypothesis("T2", "a6", generator="Gen Beta", selected=True, forecasts={"m1": True, "m2": True})],
        "scores": scores("T2", "a6", [0, 4, 4, 4]),
    }
    benchmark_import_file(benchmark=benchmark, filename="more.json", content=json.dumps(more).encode(), user=None)
    assert analyst_client.get(url).content == drawn
    changed = benchmark_statistics(benchmark)
    page = analyst_client.get(f"/benchmarks/{benchmark.pk}/statistics/").content.decode()
    new_url = f"/benchmarks/{benchmark.pk}/figures/enrichment.png?v={changed.data_version}"
    assert f'src="{new_url}"' in page and analyst_client.get(new_url).content != drawn
    # A version the cache does not hold, or a malformed one, is drawn from the data as they are.
    assert analyst_client.get(f"/benchmarks/{benchmark.pk}/figures/enrichment.png?v={'0' * 32}").status_code == 200
    assert analyst_client.get(f"/benchmarks/{benchmark.pk}/figures/enrichment.png?v=x").status_code == 200
