#!/usr/bin/env python3
"""What share of a process's CPU samples a part of kache took, by call stack.

Reads `perf script -F comm,ip,sym` of a `perf record --call-graph dwarf`
profile and gives each sample to the innermost frame of kache's own code
(`kache::…` or `apimachinery::…`): what a library does for that frame
(malloc, memcpy, hyper, the kernel) is that frame's. A sample is the
part's when that frame's symbol matches PATTERN, or when it ran on one of
the THREAD names. Prints the part's share and its frames, most first.

Auditing's cost (docs/performance.md, "Auditing"):

    perf record -F 299 -e cpu-clock --call-graph dwarf,16384 -p PID -o audit.data
    perf script -i audit.data -F comm,ip,sym > audit.txt
    loadtest/attribute.py audit.txt 'kache::audit::|chain::audit|apimachinery::audit|write_go_' audit-log

Unlike two runs compared, this needs one, so the load's noise does not
enter it; it misses what a part costs others (a lock, a cache line).
"""

import collections
import re
import sys

OWN = re.compile(r"^<?(kache|apimachinery)::|<(kache|apimachinery)::")


def samples(path):
    """Each sample's thread name and frames, innermost first."""
    comm, frames = None, []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("\t"):
                parts = line.split(None, 1)
                frames.append(parts[1].strip() if len(parts) > 1 else "")
                continue
            if comm is not None:
                yield comm, frames
            comm, frames = (line.strip(), []) if line.strip() else (None, [])
    if comm is not None:
        yield comm, frames


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    pattern, threads = re.compile(sys.argv[2]), set(sys.argv[3:])
    total, part = 0, collections.Counter()
    for comm, frames in samples(sys.argv[1]):
        total += 1
        if comm in threads:
            part[f"thread {comm}"] += 1
            continue
        own = next((f for f in frames if OWN.search(f)), None)
        if own and pattern.search(own):
            part[own[:110]] += 1
    taken = sum(part.values())
    print(f"{taken} of {total} samples ({100 * taken / max(total, 1):.2f} %)")
    for frame, n in part.most_common(20):
        print(f"{n:8}  {frame}")


if __name__ == "__main__":
    main()
