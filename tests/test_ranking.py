"""The learned ranker: features of known candidates on a fixture repository with git history,
the numpy tree evaluator against LightGBM itself, deterministic training, the ranker putting the
obvious candidate first, and model files that are missing, broken or made for other features."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from nsccn import ranking
from nsccn.indexing.indexer import index_repository
from nsccn.serving.navigator import Navigator
from nsccn.ranking import RankerError, Trees, load_ranker, save_ranker
from nsccn.ranking.features import FILE_FEATURES, FUNCTION_FEATURES, candidates, row_of
from nsccn.ranking.train import fit, rerank
from nsccn.store import Store
from tests.test_history import commit, git

CONFIG_V1 = '''\
"""Reading the configuration file."""


def parse_config(path):
    """Read the settings file and return its lines."""
    return open(path).read().splitlines()


class SettingsConflict(Exception):
    """Two settings files disagree."""


def merge_settings(base, extra):
    """Overlay extra settings on the base ones."""
    if extra is None:
        raise SettingsConflict("nothing to merge")
    out = dict(base)
    out.update(extra)
    return out
'''
RENDER = '''\
class Renderer:
    """Turn values into text for the terminal."""

    def render_value(self, value):
        if value is None:
            raise SettingsConflict("no value")
        return str(value)

    def render_table(self, rows):
        return "\\n".join(self.render_value(r) for r in rows)
'''
TESTS = '''\
from app.config import parse_config


def test_parse_config(tmp_path):
    assert parse_config(tmp_path / "x") == []
'''


@pytest.fixture
def ranked_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, {"app/config.py": CONFIG_V1, "app/render.py": RENDER, "tests/test_config.py": TESTS},
           "Initial import", 1_600_000_000)
    commit(root, {"app/config.py": CONFIG_V1.replace(".read()", ".read(1 << 20)")},
           "Fix parse_config reading huge settings files", 1_600_086_400)
    index_repository(root, workers=1, embed=False)  # the lexical features alone (vectors: below)
    return root


QUERY = ("parse_config crashes on an empty settings file\n\nTraceback (most recent call last):\n"
         '  File "app/config.py", line 6, in parse_config\nIndexError: list index out of range\n'
         "Calling `parse_config(path)` on an empty app/config.py settings file fails.")


def features_of(root: Path, query: str):
    with Store(root / ".nsccn" / "index.db", readonly=True) as store:
        fusion, vector = ranking.featurize(store, query)
        return candidates(store, query, fusion, vector)



def test_each_function_value_lands_in_its_named_column(ranked_repo):
    """Rows are built by name: each column holds what its name says, for every candidate (two
    values swapped, kind_method and kind_class say, fail here)."""
    query = ("Renderer.render_value raises SettingsConflict on a None row\n\n"
             "Calling `render_table(rows)` from app/render.py with a None row fails.")
    cands = features_of(ranked_repo, query)
    with Store(ranked_repo / ".nsccn" / "index.db", readonly=True) as store:
        rows = store.entities(cands.functions)
    assert {"method:app/render.py:Renderer.render_value", "class:app/config.py:SettingsConflict",
            "func:app/config.py:parse_config"} <= set(cands.functions)
    for fid, row in zip(cands.functions, cands.function_rows):
        g, e = dict(zip(FUNCTION_FEATURES, row)), rows[fid]
        assert (g["kind_method"], g["kind_class"]) == (float(e.kind == "method"), float(e.kind == "class")), fid
        assert g["qual_depth"] == len(e.qualname.split(".")), fid
        assert g["lines_log"] == pytest.approx(math.log1p(e.end_line - e.start_line + 1)), fid
        assert g["name_called"] == float(f"{e.name}(" in query), fid
        assert g["name_backticked"] == float(f"`{e.name}" in query), fid
        assert g["file_is_test"] == float(e.path.startswith("tests/")), fid
        assert (g["q_frames"], g["q_paths"], g["q_chars_log"]) == (0, 1, pytest.approx(math.log1p(len(query))))


def test_a_feature_row_needs_every_name_once():
    values = {name: float(i) for i, name in enumerate(FUNCTION_FEATURES)}
    assert row_of(values, FUNCTION_FEATURES) == [float(i) for i in range(len(FUNCTION_FEATURES))]
    without = {k: v for k, v in values.items() if k != "kind_class"}
    with pytest.raises(ValueError, match=r"missing \['kind_class'\], unknown \[\]"):
        row_of(without, FUNCTION_FEATURES)
    with pytest.raises(ValueError, match=r"missing \['kind_class'\], unknown \['kind_klass'\]"):
        row_of({**without, "kind_klass": 1.0}, FUNCTION_FEATURES)

def test_features_of_a_known_candidate(ranked_repo):
    cands = features_of(ranked_repo, QUERY)
    assert all(len(r) == len(FILE_FEATURES) for r in cands.file_rows)
    assert all(len(r) == len(FUNCTION_FEATURES) for r in cands.function_rows)
    f = dict(zip(FILE_FEATURES, cands.file_rows[cands.files.index("app/config.py")]))
    assert f["path_mentioned"] == 1.0 and f["basename_mentioned"] == 1.0
    assert f["frames_in_file"] == 1 and f["innermost_frame"] == 1.0
    assert f["idents_defined"] == 1 and f["is_test"] == 0.0
    assert f["hist_commits"] == pytest.approx(math.log1p(2)) and f["hist_fixes"] == pytest.approx(math.log1p(1))
    assert f["hist_similar"] > 0
    assert math.isnan(f["best_vector_rank"])  # no vectors in this index: missing, not zero
    index_repository(ranked_repo, workers=1)  # as `nsccn index` builds it: the static vectors too
    with_vectors = features_of(ranked_repo, QUERY)
    f = dict(zip(FILE_FEATURES, with_vectors.file_rows[with_vectors.files.index("app/config.py")]))
    assert f["best_vector_rank"] >= 0
    g = dict(zip(FUNCTION_FEATURES, cands.function_rows[cands.functions.index("func:app/config.py:parse_config")]))
    assert g["name_identifier"] == 1.0 and g["name_called"] == 1.0 and g["name_backticked"] == 1.0
    assert g["name_in_frame"] == 1.0 and g["name_word"] == 1.0 and g["name_parts_overlap"] == 1.0
    assert g["kind_method"] == 0.0 and g["qual_depth"] == 1 and g["file_path_mentioned"] == 1.0
    # Only the fix names parse_config in a hunk header (the import added the whole file: no header).
    assert g["hist_fn_commits"] == pytest.approx(math.log1p(1)) and g["hist_fn_fixes"] == pytest.approx(math.log1p(1))
    assert g["bm25_name"] > 0
    # The title (the query's first line) names parse_config: its own BM25 ranks it first.
    assert g["name_in_title"] == 1.0 and g["title_name_hits"] == 1.0 and g["title_rank"] == 1.0
    assert g["title_bm25_rel"] == 1.0 and 0 < g["title_coverage"] <= 1.0 and 0 < g["coverage"] <= 1.0
    assert g["file_coverage"] == f["file_coverage"] and g["title_file_bm25_rel"] == f["title_file_bm25_rel"]
    assert 0 < f["file_bm25_rel"] <= 1.0 and 0 < f["title_file_bm25_rel"] <= 1.0 and f["title_file_rank"] >= 1
    other = dict(zip(FUNCTION_FEATURES, cands.function_rows[cands.functions.index("func:app/config.py:merge_settings")]))
    assert other["name_identifier"] == 0.0 and other["name_called"] == 0.0
    # merge_settings: one of its two name parts (`settings`) is in the title, its name is not.
    assert other["name_in_title"] == 0.0 and other["title_name_hits"] == 0.5 and other["title_rank"] > 1
    # The query's code alone (`parse_config`, app/config.py) ranks parse_config first too.
    assert g["code_rank"] == 1.0 and g["code_bm25_rel"] == 1.0 and 0 < g["code_coverage"] <= 1.0
    assert g["code_file_bm25_rel"] == f["code_file_bm25_rel"] > 0
    # The past fix of parse_config reads like the title: similar past fixes, by title alone.
    assert f["hist_title_similar"] > 0 and g["hist_fn_title_similar"] > 0
    assert g["hist_file_title_similar"] == f["hist_title_similar"]
    assert g["raises_named"] == 0.0  # IndexError is named, but nothing in the repository raises it
    if "method:app/render.py:Renderer.render_value" in cands.functions:
        r = dict(zip(FUNCTION_FEATURES, cands.function_rows[cands.functions.index("method:app/render.py:Renderer.render_value")]))
        assert r["kind_method"] == 1.0 and r["qual_depth"] == 2


def test_raise_sites_of_a_named_error_and_a_query_without_code(ranked_repo):
    cands = features_of(ranked_repo, "Merging settings fails with SettingsConflict\n\nwhen the extra settings are missing")
    g = {fid.rsplit(":", 1)[1]: dict(zip(FUNCTION_FEATURES, row)) for fid, row in zip(cands.functions, cands.function_rows)}
    # Two functions raise SettingsConflict: each raise site weighs 1/sqrt(2).
    assert g["merge_settings"]["raises_named"] == pytest.approx(2 ** -0.5)
    assert g["merge_settings"]["file_raises_named"] == pytest.approx(2 ** -0.5)
    assert g["parse_config"]["raises_named"] == 0.0
    if "Renderer.render_value" in g:
        assert g["Renderer.render_value"]["raises_named"] == pytest.approx(2 ** -0.5)
    f = dict(zip(FILE_FEATURES, cands.file_rows[cands.files.index("app/config.py")]))
    assert f["raises_named"] == pytest.approx(2 ** -0.5)
    assert f["code_file_bm25_rel"] > 0  # the name of the error is the query's code
    # No identifier in the query: the code-only features are missing, not zero.
    plain = features_of(ranked_repo, "the extra settings are merged wrongly")
    f = dict(zip(FILE_FEATURES, plain.file_rows[plain.files.index("app/config.py")]))
    g = dict(zip(FUNCTION_FEATURES, plain.function_rows[plain.functions.index("func:app/config.py:merge_settings")]))
    assert math.isnan(f["code_file_bm25_rel"]) and math.isnan(g["code_rank"]) and g["raises_named"] == 0.0


def _quiet_file_repo(root: Path) -> Path:
    """A file whose functions the query's words never reach, among files of busier functions."""
    (root / "app").mkdir(parents=True)
    (root / "app/settings_reader.py").write_text(
        "def parse_config(path):\n    return open(path).read()\n\n\n"
        + "".join(f"def quiet_helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(4))
        + "class Loader:\n    def load(self):\n        def inner():\n            return 1\n        return inner()\n")
    for i in range(70):  # they call each other: more PageRank than the quiet helpers
        (root / f"app/other_{i}.py").write_text(
            "".join(f"def other_{i}_{j}(y):\n    return other_{i}_{(j + 1) % 3}(y)\n\n\n" for j in range(3)))
    index_repository(root, workers=1, embed=False)  # the candidates the lexical streams make
    return root


def test_the_best_files_functions_join_the_candidates(tmp_path):
    from nsccn.ranking.train import restrict_expansion

    root = _quiet_file_repo(tmp_path / "repo")
    query = "parse_config returns the wrong text"
    with Store(root / ".nsccn" / "index.db", readonly=True) as store:
        fusion, vector = ranking.featurize(store, query)
        assert fusion.files[0] == "app/settings_reader.py"
        plain = candidates(store, query, fusion, vector, expand=0)
        wide = candidates(store, query, fusion, vector, expand=3, per_file=9)
        narrow = candidates(store, query, fusion, vector, expand=1, per_file=2)
    ours = [f for f in plain.functions if "settings_reader" in f]
    assert ours == ["func:app/settings_reader.py:parse_config"] and plain.expanded == []
    joined = wide.functions[len(wide.functions) - len(wide.expanded):]
    assert sorted(joined) == sorted(["method:app/settings_reader.py:Loader.load", "class:app/settings_reader.py:Loader"]
                                    + [f"func:app/settings_reader.py:quiet_helper_{i}" for i in range(4)])
    assert not any("inner" in f for f in wide.functions)  # a nested function is its outer function's
    assert sorted(wide.expanded) == [0, 2, 3, 4, 5, 6]  # parse_config (already a candidate) holds one place
    # A smaller expansion is a subset: training restricts a widely featured record exactly.
    record = {"files": wide.files, "file_rows": wide.file_rows, "functions": wide.functions,
              "function_rows": wide.function_rows, "function_labels": [0] * len(wide.functions),
              "expanded": wide.expanded}
    for expand, per_file, want in ((1, 2, narrow), (0, 9, plain)):
        got = restrict_expansion(record, expand, per_file)
        assert got["functions"] == want.functions and got["expanded"] == want.expanded
        np.testing.assert_array_equal(np.asarray(got["function_rows"]), np.asarray(want.function_rows))


def test_tree_evaluator_matches_lightgbm():
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 6))
    x[rng.random(x.shape) < 0.15] = np.nan
    x[:, 5] = np.where(rng.random(600) < 0.3, 0.0, x[:, 5])
    y = (np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 1]) > 0.5).astype(float) + (np.isnan(x[:, 2])).astype(float)
    for params in ({"objective": "lambdarank"}, {"objective": "regression", "zero_as_missing": True}):
        ds = lgb.Dataset(x, y, group=[20] * 30 if params["objective"] == "lambdarank" else None)
        booster = lgb.train(dict(params, verbosity=-1, num_leaves=7, min_data_in_leaf=5, seed=1), ds, num_boost_round=40)
        trees = Trees.from_lightgbm_dump(booster.dump_model())
        np.testing.assert_allclose(trees.predict(x), booster.predict(x, raw_score=True), rtol=1e-9, atol=1e-9)


def synthetic_records(n: int = 60, seed: int = 0) -> list[dict]:
    """Queries whose right candidate is the one its name is called in the query, among distractors
    that BM25 (fusion order) sometimes prefers."""
    rng = np.random.default_rng(seed)
    records = []
    for q in range(n):
        k = 12
        gold = int(rng.integers(k))
        frows, grows = [], []
        for i in range(k):
            base = [float(rng.integers(5, 40)), 1.0, 0.0, 0.0, 6.0, 0.0]
            f = base + [float(rng.random()) for _ in FILE_FEATURES[len(base):]]
            g = base + [float(rng.random()) for _ in FUNCTION_FEATURES[len(base):]]
            g[FUNCTION_FEATURES.index("name_called")] = float(i == gold)
            f[FILE_FEATURES.index("path_mentioned")] = float(i == gold)
            frows.append(f)
            grows.append(g)
        files = [f"f{i}.py" for i in range(k)]
        fns = [f"func:f{i}.py:fn{i}" for i in range(k)]
        records.append({
            "instance_id": f"q{q}", "repo": f"r{q % 3}", "gold_files": [files[gold]], "gold_functions": [f"f{gold}.py:fn{gold}"],
            "files": files, "file_rows": frows, "file_labels": [int(i == gold) for i in range(k)],
            "functions": fns, "function_rows": grows, "function_labels": [int(i == gold) for i in range(k)],
            "fusion_files": files, "fusion_functions": fns,
        })
    return records


def test_training_is_deterministic_and_learns_the_obvious(tmp_path):
    records = synthetic_records()
    a = fit(records[:40], seed=3, rounds=30)
    b = fit(records[:40], seed=3, rounds=30)
    save_ranker(a, tmp_path / "a.npz")
    save_ranker(b, tmp_path / "b.npz")
    with np.load(tmp_path / "a.npz") as da, np.load(tmp_path / "b.npz") as db:
        assert sorted(da.files) == sorted(db.files)
        for k in da.files:
            assert np.array_equal(da[k], db[k]), k
    for r in records[40:]:  # held-out queries: the called function and the mentioned file come first
        files, functions = rerank(a, r)
        assert files[0] == r["gold_files"][0]
        assert functions[0].endswith(r["gold_functions"][0].split(":")[1])


def test_training_variants_bagged_monotone_and_weighted_queries():
    """The variants `benchmarks/train_ranker.py` measures (docs/learned-ranking.md: none shipped): a bag of 2 scores
    the mean of its two seeds' models; a monotone model never scores a candidate lower for being
    mentioned; a query of weight 0 teaches nothing."""
    from nsccn.ranking.features import Candidates
    from nsccn.ranking.train import monotone_constraints

    records = synthetic_records()
    signs = dict(zip(FUNCTION_FEATURES, monotone_constraints(FUNCTION_FEATURES)))
    assert (signs["name_called"], signs["fusion_rank"], signs["bm25_body"], signs["lines_log"], signs["q_terms"],
            signs["prior_rank"]) == (1, -1, 1, 0, 0, 0)
    one, two = fit(records, seed=3, rounds=20), fit(records, seed=4, rounds=20)
    bag = fit(records, seed=3, rounds=20, bag=2)
    cands = Candidates(records[0]["files"], records[0]["file_rows"], records[0]["functions"], records[0]["function_rows"])
    for mean, a, b in zip(bag.score(cands), one.score(cands), two.score(cands)):
        np.testing.assert_allclose(mean, (a + b) / 2, rtol=1e-9, atol=1e-12)
    mono = fit(records, rounds=20, monotone=True)
    rows = np.asarray(records[1]["function_rows"], dtype=float)
    lo, hi = rows.copy(), rows.copy()
    lo[:, FUNCTION_FEATURES.index("name_called")], hi[:, FUNCTION_FEATURES.index("name_called")] = 0.0, 1.0
    score = lambda x: mono.score(Candidates(cands.files, cands.file_rows, cands.functions, x.tolist()))[1]  # noqa: E731
    assert (score(hi) >= score(lo)).all() and (score(hi) > score(lo)).any()
    # Queries whose label contradicts the called name: weighed 0, the model learns only from the
    # others (called first); weighed 20 times the others, it no longer puts the called one first.
    def contradicting(weight):
        out = []
        for r in synthetic_records(60, seed=9):
            labels = r["function_labels"][1:] + r["function_labels"][:1]  # the label on another candidate
            out.append(dict(r, function_labels=labels, weight=weight))
        return out

    held_out = synthetic_records(20, seed=5)

    def called_first(model):
        return sum(rerank(model, r)[1][0].endswith(r["gold_functions"][0].split(":")[1]) for r in held_out)

    assert called_first(fit(records[:30] + contradicting(0.0), rounds=30)) == len(held_out)
    assert called_first(fit(records[:30] + contradicting(20.0), rounds=30)) < len(held_out) // 2


def test_a_files_score_adds_the_best_of_its_candidate_functions():
    files = ["a.py", "b.py", "c.py"]
    functions = ["func:a.py:f", "method:a.py:C.g", "func:b.py:h"]
    fn_scores = np.array([0.5, 2.0, -1.0])
    got = ranking.with_function_evidence(files, np.array([1.0, 1.0, 1.0]), functions, fn_scores)
    w = ranking.FUNCTION_EVIDENCE
    assert w > 0
    # a.py: its best function (2.0); b.py: its only one; c.py has none: the query's lowest (-1.0)
    assert np.allclose(got, [1.0 + 2.0 * w, 1.0 - 1.0 * w, 1.0 - 1.0 * w])
    # a file ranked second by its own model comes first when its functions are much better
    close = ranking.with_function_evidence(["x.py", "y.py"], np.array([1.0, 0.9]), ["func:x.py:f", "func:y.py:g"],
                                           np.array([0.0, 1.0]))
    assert ranking.order(["x.py", "y.py"], close, []) == ["y.py", "x.py"]
    # no candidate functions: the file model's scores unchanged
    assert np.array_equal(ranking.with_function_evidence(files, np.array([3.0, 2.0, 1.0]), [], np.array([])),
                          [3.0, 2.0, 1.0])


def rewrite_header(path: Path, change) -> None:
    """The model file with its JSON header changed by `change(header)`."""
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    header = json.loads(str(arrays.pop("header")))
    change(header)
    with open(path, "wb") as fh:
        np.savez(fh, header=np.asarray(json.dumps(header)), **arrays)


def test_model_files_missing_broken_or_for_other_features(tmp_path):
    with pytest.raises(RankerError, match="no ranking model"):
        load_ranker(tmp_path / "absent.npz")
    (tmp_path / "broken.npz").write_bytes(b"not a model")
    with pytest.raises(RankerError, match="cannot be read"):
        load_ranker(tmp_path / "broken.npz")
    model = fit(synthetic_records(30), rounds=5)
    save_ranker(model, tmp_path / "old.npz")
    assert load_ranker(tmp_path / "old.npz").info["queries"] == 30
    rewrite_header(tmp_path / "old.npz", lambda h: h.update(feature_version=-1))
    with pytest.raises(RankerError, match="trained on other features"):
        load_ranker(tmp_path / "old.npz")


def test_a_repository_model_is_used_and_a_stale_one_falls_back(ranked_repo):
    index_dir = ranked_repo / ".nsccn"
    model = fit(synthetic_records(30), rounds=5)
    save_ranker(model, index_dir / ranking.USER_MODEL_NAME)
    nav = Navigator(ranked_repo)
    out = nav.localize(QUERY, limit=5)
    assert out.ranking.startswith("learned ranker (repository model")
    assert out.files and out.functions
    rewrite_header(index_dir / ranking.USER_MODEL_NAME, lambda h: h["features"].update(file=h["features"]["file"][:-1]))
    out = nav.localize(QUERY, limit=5)
    # A repository model made for other features is refused: the shipped one answers.
    assert out.ranking.startswith("learned ranker (shipped model")
    assert "ranking" in nav.status()
    nav.close()


def test_train_ranker_on_the_repositorys_own_fixes(tmp_path):
    """`nsccn train-ranker`: the repository's fix commits become training queries; the model is
    written beside the index, status and localize say it is used, --reset goes back."""
    import subprocess
    import sys

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    topics = ["cache", "parser", "socket", "token", "render", "config", "schema", "stream", "session", "upload",
              "retry", "logger"]
    files = {f"lib/{t}.py": "".join(f"def {t}_{v}(x):\n    return x + {i}\n\n\n" for i, v in
                                    enumerate(["open", "read", "close"])) for t in topics}
    commit(root, files, "Initial import", 1_600_000_000)
    for i, t in enumerate(topics):
        text = files[f"lib/{t}.py"].replace("return x + 1", "return x - 1")
        files[f"lib/{t}.py"] = text
        commit(root, {f"lib/{t}.py": text}, f"Fix {t} read returning the wrong value for empty {t} input",
               1_600_100_000 + 1000 * i)
    index_repository(root, workers=1)

    def nsccn(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "nsccn.cli", *args, "--root", str(root)], capture_output=True,
                              text=True, timeout=240)

    # Measured first: adapted on the 9 older fixes, both models rank the 3 newest. The shipped model
    # already ranks these synthetic fixes perfectly, so the adapted one is no better: nothing written.
    out = nsccn("train-ranker", "--commits", "12", "--rounds", "5")
    assert out.returncode == 0, out.stderr
    assert "held back the 3 newest of 12 fix commits" in out.stdout and "kept the model in use" in out.stdout
    assert re.search(r"shipped +file@1 100\.0 .*function@5 100\.0", out.stdout), out.stdout
    assert not (root / ".nsccn" / ranking.USER_MODEL_NAME).exists()
    out = nsccn("train-ranker", "--commits", "12", "--rounds", "5", "--json", "--force")  # written all the same
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["measured"]["adapted"] == res["measured"]["shipped"]
    assert res["queries"] == 12 and Path(res["model"]).exists()
    assert "repository model" in json.loads(nsccn("status", "--json").stdout)["ranking"]
    loc = json.loads(nsccn("localize", "socket read gives the wrong value for empty socket input", "--json").stdout)
    assert "repository model" in loc["ranking"] and loc["files"][0] == "lib/socket.py"
    bad = nsccn("train-ranker", "--commits", "3")
    assert bad.returncode == 2 and "between 10 and 5000" in bad.stderr
    reset = json.loads(nsccn("train-ranker", "--reset", "--json").stdout)
    assert reset["removed"] and "repository model" not in reset["ranking"]


def test_vector_features_when_the_index_has_vectors(ranked_repo):
    """With vectors the vector stream's ranks become features (not missing) and its best functions join."""
    index_repository(ranked_repo, workers=1, embed=True)
    cands = features_of(ranked_repo, "the settings file reader fails on empty input")
    f = dict(zip(FILE_FEATURES, cands.file_rows[cands.files.index("app/config.py")]))
    assert 1 <= f["best_vector_rank"] < 1000
    ranks = [dict(zip(FUNCTION_FEATURES, row))["vector_rank"] for row in cands.function_rows]
    assert all(not math.isnan(r) for r in ranks) and min(ranks) == 1


def test_a_model_that_never_read_vectors_ranks_without_them(ranked_repo):
    """The index has vectors, the model was trained where they were always missing: it never learned
    what a vector rank means, so the vector stream's candidates would join scored blind (on 51
    held-out dev reports they cost file@5 90.2 -> 86.3). They stay out; a model that splits on
    vector features gets them."""
    index_repository(ranked_repo, workers=1, embed=True)
    blind, led = synthetic_records(40), synthetic_records(40, seed=1)
    for r in blind:
        for rows, col in ((r["file_rows"], FILE_FEATURES.index("best_vector_rank")),
                          (r["function_rows"], FUNCTION_FEATURES.index("vector_rank"))):
            for row in rows:
                row[col] = float("nan")
    for r in led:  # the vector stream ranks the right candidate first, nothing else says so
        gold_file, gold_fn = r["file_labels"].index(1), r["function_labels"].index(1)
        for rows, col, gold in ((r["file_rows"], FILE_FEATURES.index("best_vector_rank"), gold_file),
                                (r["function_rows"], FUNCTION_FEATURES.index("vector_rank"), gold_fn)):
            for i, row in enumerate(rows):
                row[col] = 1.0 if i == gold else 2.0 + i
                row[FUNCTION_FEATURES.index("name_called") if rows is r["function_rows"]
                    else FILE_FEATURES.index("path_mentioned")] = 0.0
    a, b = fit(blind, rounds=10), fit(led, rounds=10)
    assert not a.reads("vectors") and b.reads("vectors")
    query = "values are turned into text wrongly for tables of rows"
    with Store(ranked_repo / ".nsccn" / "index.db", readonly=True) as store:
        fusion, vector = ranking.featurize(store, query)
        assert vector  # the index answers vector queries
        with_vec, without = (candidates(store, query, fusion, v) for v in (vector, None))
        assert set(with_vec.functions) > set(without.functions)  # vector-only candidates exist here
        assert ranking.localize(store, query, ranker=a).functions == \
            ranking.localize(store, query, ranker=a, use_vectors=False).functions
        assert set(ranking.localize(store, query, ranker=b).functions) > \
            set(ranking.localize(store, query, ranker=b, use_vectors=False).functions)


def test_the_ranker_reads_vector_ranks_among_non_test_entities(ranked_repo):
    """Its training indexes embedded no test file, so an index that embeds them (the default)
    would push every other entity down the vector ranks: test entities are left out."""
    index_repository(ranked_repo, workers=1, embed=True)
    from nsccn.query.streams import vector_stream
    from nsccn.reading.testpaths import is_test_path

    query = "test that parse_config reads the settings file"
    with Store(ranked_repo / ".nsccn" / "index.db", readonly=True) as store:
        nearest = vector_stream(store, query)
        rows = store.entity_at_rowids(nearest)
        assert any(is_test_path(rows[r].path) for r in nearest)  # the index embeds tests
        _, vector = ranking.featurize(store, query)
    assert vector == [r for r in nearest if not is_test_path(rows[r].path)]


def _four_repositories():
    """train_ranker (benchmarks/), 72 synthetic queries of four repositories, r0's as the dev set."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import train_ranker

    records = synthetic_records(72)
    for r in records:
        r["repo"] = f"r{int(r['instance_id'][1:]) % 4}"
    return train_ranker, records, [r for r in records if r["repo"] == "r0"], [r for r in records if r["repo"] != "r0"]


def test_queries_featured_with_vectors_train_every_fold_but_their_own_and_are_scored_there(monkeypatch):
    import copy

    train_ranker, records, dev, mined = _four_repositories()
    vectors = [copy.deepcopy(r) for r in records if r["repo"] in ("r0", "r2")]  # the same queries, with vectors
    trained_on: list[set] = []
    real_fit, vector_ids = train_ranker.fit, {id(v) for v in vectors}

    def fit(train, **kw):  # the real training; what each fold trained on is kept to look at
        trained_on.append({(r["repo"], id(r) in vector_ids) for r in train})
        return real_fit(train, **kw)

    monkeypatch.setattr(train_ranker, "fit", fit)
    scored = train_ranker.grouped_folds(dev, mined, groups=3, vectors=vectors)
    assert sorted(x["instance_id"] for x in scored if x.get("vectors")) == sorted(r["instance_id"] for r in vectors)
    assert sorted(x["instance_id"] for x in scored if not x.get("vectors")) == sorted(r["instance_id"] for r in records)
    for seen in trained_on:  # a fold that trains on a repository's vector queries is not that repository's
        held_out = {f"r{i}" for i in range(4)} - {repo for repo, _ in seen}
        assert not {repo for repo, vec in seen if vec} & held_out
        assert {repo for repo, vec in seen if vec} == {"r0", "r2"} - held_out
    trained_on.clear()
    dev_scored = train_ranker.loro(dev, mined, vectors=vectors)
    assert {x["instance_id"] for x in dev_scored if x.get("vectors")} == {r["instance_id"] for r in dev}
    assert trained_on == [{("r1", False), ("r2", False), ("r3", False), ("r2", True)}]


def test_grouped_folds_score_every_query_with_a_model_that_never_saw_its_repository():
    train_ranker, records, dev, mined = _four_repositories()
    scored = train_ranker.grouped_folds(dev, mined, groups=3)
    assert sorted(x["instance_id"] for x in scored) == sorted(r["instance_id"] for r in records)
    assert {x["held_out"] for x in scored if x["repo"] == "r0"} == {"dev"}
    assert {x["held_out"] for x in scored if x["repo"] != "r0"} == {"mined"}
    assert sum(x["metrics"]["file@1"] for x in scored) >= 0.9 * len(scored)  # the mentioned file first
    # Only one repository's mined pairs train; every query is still scored.
    few = train_ranker.grouped_folds(dev, mined, groups=3, train_ids={r["instance_id"] for r in mined if r["repo"] == "r1"})
    assert sorted(x["instance_id"] for x in few) == sorted(x["instance_id"] for x in scored)
    table = train_ranker.folds_table({"learned": scored})
    assert "| learned | 18 |" in table and "| 54 |" in table
    # Evidence weights: every query scored once more per weight, by the same fold's model.
    weighed = train_ranker.grouped_folds(dev, mined, groups=3, evidence=(0.0, 5.0))
    for w in (0.0, 5.0):
        assert sorted(x["instance_id"] for x in weighed if x.get("evidence") == w) == sorted(r["instance_id"] for r in records)
    plain = [x for x in weighed if "evidence" not in x]
    assert [x["metrics"] for x in plain] == [x["metrics"] for x in scored]


def test_train_ranker_refuses_an_unknown_ablation_group_before_reading_records(tmp_path, capsys):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import train_ranker

    missing = tmp_path / "no-such-records.jsonl"  # never opened: the groups are checked first
    with pytest.raises(SystemExit) as exit_:
        train_ranker.main(["--dev", str(missing), "--ablate", "--ablate-groups", "history+histroy"])
    assert exit_.value.code == 2
    assert "unknown feature groups ['histroy']" in capsys.readouterr().err
    dev = tmp_path / "dev.jsonl"
    dev.write_text("")
    with pytest.raises(SystemExit) as exit_:  # a missing feature file: a clear error before any training
        train_ranker.main(["--dev", str(dev), "--vectors", str(missing)])
    assert exit_.value.code == 2
    assert f"no such feature file: {missing}" in capsys.readouterr().err


def test_the_learning_curve_trains_on_samples_and_scores_only_repositories_it_never_trained_on(tmp_path, capsys):
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import ranker_learning_curve as lc

    _, records, _, _ = _four_repositories()
    train = [r for r in records if r["repo"] != "r3"]
    assert lc.sample_queries(train, 10, seed=1) == lc.sample_queries(train, 10, seed=1)  # a seed draws one sample
    assert len(lc.sample_queries(train, 10, seed=1)) == 10 and lc.sample_queries(train, 999, seed=1) == train
    two = lc.sample_repos(train, 2, seed=0)
    assert len({r["repo"] for r in two}) == 2 and all(  # whole repositories, every query of each
        sum(1 for r in two if r["repo"] == repo) == sum(1 for r in train if r["repo"] == repo) for repo in {r["repo"] for r in two})
    paths = {}
    for name, recs in (("train", train), ("test", [r for r in records if r["repo"] == "r3"])):
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert lc.main(["--train", str(paths["train"]), "--test", str(paths["test"]), "--sizes", "12", "999", "--repos", "1", "9",
                    "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "metrics.md").read_text()
    assert "| 12 queries | 12 |" in text and f"| {len(train)} queries | {len(train)} |" in text
    assert "| 1 repositories |" in text and f"| 3 repositories | {len(train)} |" in text
    assert "Scored on 18 queries of 1 repositories" in text
    assert text.count(f"| {len(train)} queries |") == 1 and text.count("| 3 repositories |") == 1  # everything once
    everything = [line for line in text.splitlines() if line.startswith(f"| {len(train)} queries")][0]
    assert float(everything.split("|")[3]) >= 90.0  # file@1: the mentioned file first, learned from 54 queries
    with pytest.raises(SystemExit):  # a test repository in the training data is refused
        lc.main(["--train", str(paths["train"]), "--test", str(paths["train"])])
    assert "also in training" in capsys.readouterr().err


def test_the_posthoc_sweep_ranks_as_the_model_does_at_its_own_settings(tmp_path, capsys):
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import ranker_posthoc
    from localize import aggregate, instance_metrics

    records = synthetic_records(60)
    model = fit(records[:40], seed=0, rounds=30)
    save_ranker(model, tmp_path / "m.npz")
    held = records[40:]
    scored = ranker_posthoc.raw_scores(load_ranker(tmp_path / "m.npz"), held)
    as_shipped = aggregate([{"metrics": instance_metrics(r["gold_files"], r["gold_functions"], *rerank(model, r))}
                            for r in held])
    assert ranker_posthoc.evaluate(scored, ranker_posthoc.with_evidence(model.function_evidence)) == as_shipped
    # A function's file counting for it can only reorder functions, never files.
    heard = ranker_posthoc.evaluate(scored, ranker_posthoc.functions_hear_files(5.0, model.function_evidence, False))
    assert [heard[k] for k in ("file@1", "file@3", "file@5")] == [as_shipped[k] for k in ("file@1", "file@3", "file@5")]
    (tmp_path / "held.jsonl").write_text("".join(json.dumps(r) + "\n" for r in held))
    assert ranker_posthoc.main(["--records", str(tmp_path / "held.jsonl"), "--model", str(tmp_path / "m.npz")]) == 0
    out = capsys.readouterr().out
    assert "20 queries of" in out and f"| function_evidence {model.function_evidence} (shipped) |" in out
