"""Two workdirs of the same corpus, file for file: the check that a change to the code changed
nothing a build writes.

    python scripts/same_build.py BEFORE AFTER

Every file must be in both and hold the same bytes, with one exception: a stage's summary
(``*/summary.json``) records how long the stage took, so summaries are compared with their
timing fields (``seconds``, ``*_s``, ``cpu*``) left out, and the manifest with the lines of
those summaries left out. Exit 0 when the two are the same, 1 otherwise, naming each file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LOCK = ".build.lock"


def files_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != LOCK)


def is_timing(key: str) -> bool:
    return key == "seconds" or key.endswith("_s") or key.startswith("cpu")


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not is_timing(k)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def differences(before: Path, after: Path) -> list[str]:
    """What differs between two workdirs, one line each (empty when they are the same)."""
    names_before, names_after = files_of(before), files_of(after)
    found = [f"only in {before}: {n}" for n in sorted(set(names_before) - set(names_after))]
    found += [f"only in {after}: {n}" for n in sorted(set(names_after) - set(names_before))]
    timed = set()
    for name in sorted(set(names_before) & set(names_after) - {"manifest.json"}):
        old, new = (before / name).read_bytes(), (after / name).read_bytes()
        if old == new:
            continue
        if name.endswith("summary.json") and without_timings(json.loads(old)) == without_timings(json.loads(new)):
            timed.add(name)
        else:
            found.append(f"differs: {name}")
    manifests = [json.loads((root / "manifest.json").read_text()) for root in (before, after)]
    entries = [{k: v for k, v in m["files"].items() if k not in timed} for m in manifests]
    if entries[0] != entries[1] or manifests[0].get("build") != manifests[1].get("build"):
        found.append("differs: manifest.json (beyond the timings of the summaries)")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    before, after = (Path(a) for a in argv)
    found = differences(before, after)
    for line in found:
        print(line)
    count = len(files_of(before))
    print(f"{count} files: {'the same' if not found else 'NOT the same'} (stage timings aside)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
