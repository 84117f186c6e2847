"""Train without many-function commits (refactors' messages rarely name each function): sixteenth
stop, negative.

    python label_noise.py 'TRAIN_FEATURES_GLOB' 'HELD_OUT_FEATURES_GLOB' fn|both MAX_FUNCTIONS

`fn`: the function model trains only on queries with at most MAX_FUNCTIONS gold functions, the
file model on all; `both`: both models on those alone. MAX_FUNCTIONS 1000 is the baseline.
"""
import sys, glob, json
from pathlib import Path
_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(_ROOT / "benchmarks")); sys.path.insert(0, str(_ROOT))
from localize import aggregate
from train_ranker import score_records
from nsccn.ranking.train import fit, load_records
from nsccn.ranking import Ranker
KEYS = ("file@1", "file@3", "file@5", "function@5", "function@10")
train = load_records(sorted(glob.glob(sys.argv[1])))
test = load_records(sorted(glob.glob(sys.argv[2])))
mode = sys.argv[3]; maxfn = int(sys.argv[4])
def few(r): return len(set(r["gold_functions"])) <= maxfn
if mode == "fn":  # the function model trains on few-function queries only; the file model on all
    a = fit(train, seed=0); b = fit([r for r in train if few(r)], seed=0)
    model = Ranker(a.files, b.functions, {})
else:  # both
    model = fit([r for r in train if few(r)], seed=0)
print(mode, maxfn, sum(few(r) for r in train), "of", len(train))
s = score_records(test, model)
m = aggregate(s); print("held-out all", " / ".join(f"{m[k]:.1f}" for k in KEYS))
ids = {r["instance_id"] for r in test if len(set(r["gold_functions"])) <= 3}
m = aggregate([x for x in s if x["instance_id"] in ids]); print(f"held-out <=3 fns ({len(ids)})", " / ".join(f"{m[k]:.1f}" for k in KEYS))
