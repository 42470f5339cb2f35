"""The version of a set's data (BenchmarkSet.data_version), which keys the cached statistics and figures.

Every service that writes what the statistics read (tasks, hypotheses, judges and their scores, the random control,
runs, the analyses' imported tables, deletions) calls `benchmark_set_touch` inside its own transaction, so the new
version becomes visible together with the data, and a rolled-back write leaves the version as it was.
tests/benchmarks/test_data_version.py runs every such service, and every table of the import format, and fails for
one that leaves the version as it was.
"""

from reviewapp.benchmarks.models import BenchmarkSet, new_data_version


def benchmark_set_touch(*, benchmark_id: int) -> None:
    """Give the set a new data version: its cached statistics and figures are no longer read."""
    BenchmarkSet.objects.filter(pk=benchmark_id).update(data_version=new_data_version())
