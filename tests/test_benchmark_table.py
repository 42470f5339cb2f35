"""The benchmarks' table of results (benchmarks/support.py): a figure shown for reference has no goal, neither passes
nor fails, and leaves the exit status to the figures that have one."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _support():
    spec = importlib.util.spec_from_file_location("benchmark_table_support", ROOT / "benchmarks" / "support.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_reference_figure_shows_its_ratio_without_a_goal_or_a_result(capsys):
    support = _support()
    results = support.Results()
    ratio = results.ratio("writer alone", [0.004], [0.001], "µs", None, floor_name="bare parse", scale=1e6)
    lines = support.table_lines(results)

    assert ratio == 4.0
    assert lines[2].split() == ["writer", "alone", "4,000", "µs", "1,000", "µs", "4.00×", "–", "–"]
    assert support.all_passed(results)


def test_a_reference_figure_does_not_hide_a_missed_goal(tmp_path, monkeypatch, capsys):
    support = _support()
    monkeypatch.setenv("OH_BENCH_ROWS", str(tmp_path / "rows.jsonl"))
    results = support.Results()
    results.ratio("writer alone", [4.0], [1.0], "s", None, floor_name="bare parse")
    results.ratio("import", [5.0], [1.0], "s", 3.0, floor_name="bare parse")

    assert results.report("literature_import_speed.py") == 1
    results.pop()
    assert results.report("literature_import_speed.py") == 0
    assert '"–", null' in (tmp_path / "rows.jsonl").read_text()
