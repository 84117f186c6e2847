#!/usr/bin/env python
"""How often a report's quoted text (a quoted string, an error line's message) is found verbatim
in the gold file's source at the report's base commit, and in how few files: an estimate of
what a "quoted phrase" feature could add, before building it (nineteenth stop).

    python quoted_phrases.py LORO.pkl --dataset ../shared/bench/swebench-dev.jsonl --mirrors MIRRORS

A phrase counts when it has two or more words and `git grep -F` finds it in 1-5 non-test files
of the repository at the base commit (`MIRRORS/OWNER+NAME/repo`, as `localize.py --mirrors`).
Crossed with `failures.py dump`'s leave-one-repository-out ranking: how many file@1 misses a
phrase found only in a gold file could turn.
"""

from __future__ import annotations

import argparse
import collections
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from nsccn.testpaths import is_test_path  # noqa: E402

QUOTED = re.compile(r"""(?<![\w])(['"])([^'"\n]{8,120})\1""")
ERROR_LINE = re.compile(r"^\s*\w+(?:Error|Exception|Warning): (.{8,200})$", re.MULTILINE)
MAX_FILES = 5


def phrases(report: str) -> list[str]:
    found = [m[1] for m in QUOTED.findall(report)] + [m.strip() for m in ERROR_LINE.findall(report)]
    return [p for p in dict.fromkeys(found) if len(re.findall(r"[A-Za-z]{2,}", p)) >= 2]


def files_with(git_dir: Path, commit: str, phrase: str) -> list[str]:
    out = subprocess.run(["git", f"--git-dir={git_dir}", "grep", "-F", "-l", "-e", phrase, commit, "--", "*.py"],
                         capture_output=True, text=True).stdout.split()
    return [f for f in (o.split(":", 1)[1] for o in out) if not is_test_path(f)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("loro", type=Path, help="failures.py dump output")
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    args = ap.parse_args(argv)
    ranked = pickle.loads(args.loro.read_bytes())
    counts = collections.Counter()
    turnable = []
    for line in args.dataset.open():
        r = json.loads(line)
        git_dir = args.mirrors / r["repo"].replace("/", "+") / "repo"
        found = {}
        for p in phrases(r["problem_statement"])[:12]:
            files = files_with(git_dir, r["base_commit"], p)
            if 0 < len(files) <= MAX_FILES:
                found[p] = files
        gold = set(r["gold_files"])
        first = ranked[r["instance_id"]]["files"][:1]
        hit = len(gold) == 1 and first == r["gold_files"][:1]
        in_gold = any(gold & set(f) for f in found.values())
        only_gold = any(len(f) == 1 and f[0] in gold for f in found.values())
        counts["reports"] += 1
        counts["with a quoted phrase"] += bool(phrases(r["problem_statement"]))
        counts[f"with a phrase in 1-{MAX_FILES} files"] += bool(found)
        counts["  of them, in a gold file"] += in_gold
        counts["  of them, in a gold file alone"] += only_gold
        key = "file@1 hit" if hit else "file@1 miss"
        counts[key] += 1
        counts[f"{key}, a phrase in a gold file"] += in_gold
        counts[f"{key}, a phrase in a gold file alone"] += only_gold
        if not hit and in_gold:
            turnable.append((r["instance_id"], r["gold_files"], ranked[r["instance_id"]]["files"][:3], found))
    print("| | reports |\n|---|---|")
    for key, value in counts.items():
        print(f"| {key} | {value} |")
    print("\nfile@1 misses with a phrase in a gold file (gold files, the ranker's top 3, phrase -> files):")
    for item in turnable:
        print("   ", *item)
    return 0


if __name__ == "__main__":
    sys.exit(main())
