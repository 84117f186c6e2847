"""The results of `impact_eval.py` runs, per repository and pooled over every commit they replayed.

    python benchmarks/impact_pool.py flask=a.json,b.json click=c.json ... [--json] [--recorded] [--short]

Per selector (`impact`, the file-level importers, `test_<module>.py`): median recall / mean recall /
safety over the commits some test covers; median selection rate over all commits and over the
covered ones. Beside them, the truth's own share of the suite (covering tests / all tests, median
over the covered commits: what a perfect selection would take) and the median of each covered
commit's selection minus that share: the part of the selection the graph adds beyond the suite's
own coupling. A repository whose tests all build one object (`app`) has a covering share near
its selection: the gap to a 25% selection is the suite's, not the graph's. The last column scores
`impact` against the truth as written (every covering test of a changed line, also where the
change leaves the code as Python runs it: comments, annotations); results from before that
distinction count the same in both.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

SELECTORS = (("nsccn", "impact (graph tests)"), ("nsccn_run", "impact `run` (+ module tests, test files)"), ("file_importers", "importers"), ("named_test_module", "test_<module>.py"),
             ("nsccn_as_written", "impact vs the truth as written"))
OPTIONAL = (("nsccn_run_tiers", "impact `run`, never the whole suite"),
            *((f"nsccn_run_suite_{f:g}", f"impact `run`, the whole suite at {f:g} of it reached") for f in (0.3, 0.5, 0.9)),
            ("nsccn_run_by_test", "impact `run`, no test file run whole"), ("nsccn_run_files", "impact `run`, every reached test file whole"),
            ("nsccn_depth_7", "impact, tests within 7 hops"), ("nsccn_depth_6", "impact, tests within 6 hops"))


def load(paths: list[str]) -> list[dict]:
    return [r for p in paths for r in json.loads(Path(p).read_text())["commits"]]


def cell(rows: list[dict], key: str) -> dict:
    if key == "nsccn_as_written":  # the truth before lines that run the same were left out of it
        rows = [{**r, "covering": r.get("covering_as_written", r["covering"]), key: r.get(key, r["nsccn"])} for r in rows]
    if key == "nsccn_run":  # results from before the module tests ran the graph's tests alone
        rows = [{**r, key: r.get(key, r["nsccn"])} for r in rows]
    covered = [r for r in rows if r["covering"]]
    rec = [r[key]["recall"] for r in covered]
    return {
        "median_recall": statistics.median(rec) if rec else None,
        "mean_recall": statistics.fmean(rec) if rec else None,
        "safety": sum(r[key]["safe"] for r in covered) / len(covered) if covered else None,
        "selection_all": statistics.median(r[key]["selection_rate"] for r in rows) if rows else None,
        "selection_covered": statistics.median(r[key]["selection_rate"] for r in covered) if covered else None,
        "excess_covered": statistics.median(r[key]["selection_rate"] - r["covering"] / r["suite_tests"]
                                            for r in covered) if covered else None,
    }


def summary(rows: list[dict]) -> dict:
    covered = [r for r in rows if r["covering"]]
    return {"commits": len(rows), "covered": len(covered),
            "covering_share": statistics.median(r["covering"] / r["suite_tests"] for r in covered) if covered else None,
            **{label: cell(rows, key) for key, label in SELECTORS}}


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("groups", nargs="+", help="LABEL=results.json[,more.json]")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    ap.add_argument("--recorded", action="store_true", help="the commits scored with stale per-test coverage "
                    "(`impact_eval.py --recorded-ago K`) only, that answer beside the others on them")
    ap.add_argument("--short", action="store_true", help="one row a group: the answer's (with --recorded, the recorded "
                    "answer's) safety, median (mean) recall, median (mean) selection and median time share over every "
                    "commit, and the importers' safety / median selection")
    args = ap.parse_args()
    groups = {}
    for spec in args.groups:
        label, _, paths = spec.partition("=")
        groups[label] = [r for r in load(paths.split(",")) if not args.recorded or "nsccn_recorded" in r]
    global SELECTORS
    if args.recorded:
        SELECTORS = (("nsccn_recorded", "impact `run` with the recorded coverage"), *SELECTORS)
    # each commit once, though a group of repositories lists it again
    groups["pooled"] = list({r["commit"]: r for rows in list(groups.values()) for r in rows}.values())
    SELECTORS = SELECTORS + tuple(o for o in OPTIONAL if all(o[0] in r for rows in groups.values() for r in rows))
    if args.short:
        key = "nsccn_recorded" if args.recorded else "nsccn_run"
        print("| group | commits (covered) | safety | median recall (mean) | median selection (mean) | median time share "
              "| importers: safety / median selection |")
        print("|---|---|---|---|---|---|---|")
        for label, rows in groups.items():
            c, imp = cell(rows, key), cell(rows, "file_importers")
            sel = [r[key]["selection_rate"] for r in rows]
            print(f"| {label} | {len(rows)} ({sum(1 for r in rows if r['covering'])}) | {c['safety']:.3f} | "
                  f"{c['median_recall']:.2f} ({c['mean_recall']:.3f}) | {statistics.median(sel):.3f} ({statistics.fmean(sel):.3f}) | "
                  f"{statistics.median(r[key]['time_share'] for r in rows):.3f} | {imp['safety']:.3f} / {imp['selection_all']:.3f} |")
        return 0
    out = {label: summary(rows) for label, rows in groups.items()}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print("| repository | commits (covered) | covering share | " + " | ".join(label for _, label in SELECTORS) + " |")
    print("|---|---|---|" + "---|" * len(SELECTORS))
    for label, s in out.items():
        cells = []
        for _, name in SELECTORS:
            c = s[name]
            cells.append(" / ".join(fmt(c[k]) for k in ("median_recall", "mean_recall", "safety", "selection_all",
                                                         "selection_covered", "excess_covered")))
        print(f"| {label} | {s['commits']} ({s['covered']}) | {fmt(s['covering_share'])} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
