"""Loading a LIBSVM dataset with and without its parsed files in the cache folder.

    python benchmarks/bench_parsed_cache.py [--dataset a9a] [--data-dir DIR] [--repeat 5]

Each load runs in a new process, ``svmlab.data.load`` timed inside it around the call (imports
excluded), from a cache folder that is

- empty: the files are measured (checked against the catalogue), parsed, and the entry written;
- without parsed files: the files' records are there, so they are parsed only (what every load
  cost before the parsed files were kept);
- warm: a load has run before; the entry is checked and memory-mapped.

Prints the median, min and max seconds of each and the medians' ratios to the warm load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from commands import timed

LOAD = (
    "import sys, time\nfrom svmlab import data\nstart = time.perf_counter()\n"
    "data.load(sys.argv[1], data_dir=sys.argv[2], cache_dir=sys.argv[3])\n"
    "print(time.perf_counter() - start)"
)


def load_seconds(dataset: str, data_dir: str, cache: Path) -> float:
    command = [sys.executable, "-c", LOAD, dataset, data_dir, str(cache)]
    _, done = timed(command, cache.parent, f"loading {dataset}")
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="a9a")
    parser.add_argument(
        "--data-dir", default=os.environ.get("SVMLAB_DATA_DIR", "/work/shared/data/libsvm")
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "cache"
        cases = [  # in this order: the second case's loads leave the entry the third one reads
            ("empty cache folder", lambda: shutil.rmtree(cache, ignore_errors=True)),
            (
                "records, no parsed files",
                lambda: shutil.rmtree(cache / ".parsed", ignore_errors=True),
            ),
            ("warm (parsed files kept)", lambda: None),
        ]
        results = []
        for label, prepare in cases:
            seconds = []
            for _ in range(args.repeat):
                prepare()
                seconds.append(load_seconds(args.dataset, args.data_dir, cache))
            results.append((label, seconds))
    warm = statistics.median(results[-1][1])
    print(f"{args.dataset}, {args.repeat} processes each")
    print(f"{'cache folder':28s} {'median s':>9s} {'min s':>7s} {'max s':>7s} {'x warm':>7s}")
    for label, seconds in results:
        median = statistics.median(seconds)
        print(
            f"{label:28s} {median:9.3f} {min(seconds):7.3f} {max(seconds):7.3f} "
            f"{median / warm:7.1f}"
        )


if __name__ == "__main__":
    main()
