"""The table of every benchmark of one `make bench`: the rows each script appended to OH_BENCH_ROWS, in the order
they ran, as figure, measured, floor, ratio, goal and result. The file is removed once printed.

    OH_BENCH_ROWS=var/bench-rows.jsonl .venv/bin/python benchmarks/summary.py
"""

import json
import os
import sys
from pathlib import Path

from support import table_lines


def main() -> int:
    rows_file = os.environ.get("OH_BENCH_ROWS")
    if not rows_file or not Path(rows_file).exists():
        print("No benchmark reported a figure.")
        return 0
    rows = []
    for line in Path(rows_file).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        figure, *rest = entry["row"]
        rows.append([f"{entry['script'].removesuffix('.py')}: {figure}", *rest])
    Path(rows_file).unlink()
    print(f"\nEvery benchmark ({len(rows)} figures; ratios are to floors measured in the same run):\n")
    print("\n".join(table_lines(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
