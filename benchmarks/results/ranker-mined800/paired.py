"""paired.py OLD_results.json[.gz] NEW_results.json: the same held-out queries, query by query."""
import gzip, json, sys
from math import comb
def load(p, key):
    d = json.load(gzip.open(p) if p.endswith('.gz') else open(p))
    return {r['instance_id']: r for r in d[key]['instances']}
def sign_p(w, l):
    n = w + l; k = min(w, l)
    return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0
KEYS = ('file@1', 'file@3', 'file@5', 'function@5', 'function@10')
for key in sys.argv[3:] or ['learned, grouped folds']:
    a, b = load(sys.argv[1], key), load(sys.argv[2], key)
    groups = {}
    for i in a:
        if i in b:
            groups.setdefault(a[i].get('held_out', a[i]['repo'] if 'held_out' not in a[i] else ''), []).append(i)
    print(key, {g: len(v) for g, v in groups.items()})
    for g, common in groups.items():
        line = []
        for k in KEYS:
            xs = [i for i in common if a[i]['metrics'].get(k) is not None]
            ma = 100 * sum(a[i]['metrics'][k] for i in xs) / max(1, len(xs))
            mb = 100 * sum(b[i]['metrics'][k] for i in xs) / max(1, len(xs))
            w = sum(1 for i in xs if b[i]['metrics'][k] and not a[i]['metrics'][k])
            l = sum(1 for i in xs if a[i]['metrics'][k] and not b[i]['metrics'][k])
            line.append(f"{k} {ma:.1f}->{mb:.1f} (+{w}/-{l}, p={sign_p(w, l):.3f})")
        print(' ', g, len(common), '; '.join(line))
