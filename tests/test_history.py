"""The git history index: commits, the files and functions they changed, incremental updates,
a cut-off commit, and the evidence the ranker reads from it. Real git repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nsccn.reading import history
from nsccn.indexing.indexer import index_repository
from nsccn.store import Store

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(root: Path, *args: str, when: int | None = None) -> str:
    env = dict(os.environ, **GIT_ENV)
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{when} +0000"
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True, text=True, env=env).stdout


def commit(root: Path, files: dict[str, str], message: str, when: int) -> str:
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message, when=when)
    return git(root, "rev-parse", "HEAD").strip()


PARSER_V1 = "def parse_config(path):\n    return open(path).read()\n\n\ndef render(x):\n    return str(x)\n"
PARSER_V2 = "def parse_config(path):\n    with open(path) as fh:\n        return fh.read()\n\n\ndef render(x):\n    return str(x)\n"
PARSER_V3 = PARSER_V2.replace("return str(x)", "return repr(x)")


@pytest.fixture
def history_repo(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    shas = [
        commit(root, {"app/config.py": PARSER_V1, "app/util.py": "def helper():\n    return 1\n"},
               "Initial import of the configuration reader", 1_600_000_000),
        commit(root, {"app/config.py": PARSER_V2},
               "Fix file handle leak when parsing the configuration file", 1_600_086_400),
        commit(root, {"app/config.py": PARSER_V3}, "Render values with repr for debugging output", 1_600_172_800),
    ]
    return root, shas


def test_fix_messages_and_hunk_names():
    assert history.is_fix_message("Fix crash when the config is empty (#123)")
    assert history.is_fix_message("handle broken symlinks")
    assert not history.is_fix_message("Add a progress bar to the indexer")
    assert history.hunk_function("def parse_config(path):") == "parse_config"
    assert history.hunk_function("    async def fetch(self, url) -> bytes:") == "fetch"
    assert history.hunk_function("func (s *Server) Serve(l net.Listener) error {") == "Serve"
    assert history.hunk_function("public class Widget extends Base {") == "Widget"
    assert history.hunk_function("") is None


def test_history_records_files_functions_and_fixes(history_repo, tmp_path):
    root, shas = history_repo
    with Store(tmp_path / "h.db") as store:
        summary = history.update_history(store, root)
        assert summary.head == shas[-1] and summary.added == 3 and summary.kept == 3
        rows = store.conn.execute(
            "SELECT cm.sha, cm.is_fix, cc.path, cc.name FROM commit_changes cc JOIN commits cm ON cm.rowid = cc.commit_id"
        ).fetchall()
        fix = {(path, name) for sha, is_fix, path, name in rows if sha == shas[1]}
        assert fix == {("app/config.py", ""), ("app/config.py", "parse_config")}
        assert {sha for sha, is_fix, *_ in rows if is_fix} == {shas[1]}
        # The third commit changed render(), not parse_config().
        assert {name for sha, _f, _p, name in rows if sha == shas[2]} == {"", "render"}


def test_history_is_incremental_and_cut_at_a_commit(history_repo, tmp_path):
    root, shas = history_repo
    with Store(tmp_path / "h.db") as store:
        first = history.update_history(store, root, shas[0])  # as of the first commit: nothing later seen
        assert first.added == 1 and history.commit_count(store) == 1
        second = history.update_history(store, root, shas[2])
        assert second.added == 2 and not second.rebuilt and history.commit_count(store) == 3
        again = history.update_history(store, root, shas[2])
        assert again.added == 0
        back = history.update_history(store, root, shas[1])  # moved back: rebuilt, the later commit gone
        assert back.rebuilt and history.commit_count(store) == 2
        assert store.conn.execute("SELECT count(*) FROM commits WHERE sha=?", (shas[2],)).fetchone()[0] == 0


def test_history_keeps_only_the_newest(history_repo, tmp_path):
    root, shas = history_repo
    with Store(tmp_path / "h.db") as store:
        history.update_history(store, root, max_commits=2)
        kept = {sha for (sha,) in store.conn.execute("SELECT sha FROM commits")}
        assert kept == set(shas[1:])
        assert store.conn.execute("SELECT count(*) FROM commits_fts").fetchone()[0] == 2


def test_evidence_similar_past_fixes(history_repo, tmp_path):
    root, _ = history_repo
    with Store(tmp_path / "h.db") as store:
        history.update_history(store, root)
        ev = history.evidence(store, ["leak", "handle", "configuration"], ["app/config.py", "app/util.py"])
        assert ev.present
        assert ev.file_commits == {"app/config.py": 3, "app/util.py": 1}
        assert ev.file_fixes["app/config.py"] == 1 and ev.file_fixes["app/util.py"] == 0
        assert ev.fn_similar[("app/config.py", "parse_config")] > 0
        assert ev.file_similar["app/config.py"] > ev.file_similar.get("app/util.py", 0.0)
        assert ev.file_age_days["app/util.py"] == pytest.approx(2.0)
        none = history.evidence(store, ["leak"], [])
        assert not none.present


def test_no_git_means_no_history(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.py").write_text("def f():\n    pass\n")
    summary = index_repository(tmp_path / "plain", tmp_path / "i.db")
    assert summary.history_commits == 0
    with Store(tmp_path / "i.db") as store:
        assert not history.evidence(store, ["f"], ["a.py"]).present


def test_indexer_reads_the_history_of_a_work_tree(history_repo, tmp_path):
    root, shas = history_repo
    summary = index_repository(root, tmp_path / "i.db")
    assert summary.history_commits == 3
    commit(root, {"app/util.py": "def helper():\n    return 2\n"}, "Fix helper returning the wrong value", 1_600_259_200)
    assert index_repository(root, tmp_path / "i.db").history_commits == 4
    with Store(tmp_path / "i.db") as store:
        assert store.get_meta("history_head") == git(root, "rev-parse", "HEAD").strip()


def test_files_only_when_diffs_cannot_be_read(history_repo):
    """A clone missing blobs cannot show diffs; the files each commit changed still come through."""
    root, shas = history_repo
    text = git(root, "log", "--no-merges", "--no-renames", "--name-only", history.LOG_FORMAT)
    commits = history.parse_name_only(text)
    assert [c.sha for c in commits] == shas[::-1]
    assert commits[0].changes == {"app/config.py": set()} and commits[-1].message == "Initial import of the configuration reader"
    assert set(commits[-1].changes) == {"app/config.py", "app/util.py"}


def test_the_log_is_read_in_blocks_as_if_read_whole(history_repo, tmp_path):
    """`git log -p` streams through `read_log` block by block (never held whole); the commits
    are those of the whole output parsed at once, whatever the block size, a UTF-8 character cut
    between two blocks included."""
    root, shas = history_repo
    commit(root, {"app/util.py": "def helper():\n    return 'é—ü'\n"}, "Fix naïve décodage — ünïcode 🐍 in helper",
           1_600_259_200)
    raw = subprocess.run(["git", "-C", str(root), "log", "--no-merges", "--no-renames", "-p", "-U0", "--no-color",
                          history.LOG_FORMAT], capture_output=True, check=True).stdout
    whole = [(c.sha, c.time, c.message, c.changes, c.n_files) for c in history.parse_log(raw)]
    assert [w[0] for w in whole] == [git(root, "rev-parse", "HEAD").strip(), *shas[::-1]]
    for size in (1, 2, 3, 5, 64, len(raw)):
        blocks = [raw[i:i + size] for i in range(0, len(raw), size)]
        assert [(c.sha, c.time, c.message, c.changes, c.n_files) for c in history.read_log(blocks)] == whole, size
    read = history.read_commits(root, "HEAD")
    assert [(c.sha, c.message, c.changes) for c in read] == [w[0:1] + w[2:4] for w in whole]
    assert read[0].message == "Fix naïve décodage — ünïcode 🐍 in helper" and read[0].changes == {"app/util.py": {"helper"}}
    with pytest.raises(RuntimeError, match="(?i)not a git repository"):
        list(history._git_blocks(tmp_path, "log"))


def test_the_pipeline_reads_the_history_too(history_repo):
    """`nsccn index` through the actor pipeline (the writer) keeps the same history as the library path."""
    import json
    import sys

    root, shas = history_repo
    r = subprocess.run([sys.executable, "-m", "nsccn.cli", "index", str(root), "--pipeline", "--workers", "1"],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    status = subprocess.run([sys.executable, "-m", "nsccn.cli", "status", "--json", "--root", str(root)],
                            capture_output=True, text=True, timeout=120)
    out = json.loads(status.stdout)
    assert out["history_commits"] == 3 and "learned ranker" in out["ranking"]
    assert out["history_commit_vectors"] == 3  # the writer embeds the messages too
    with Store(root / ".nsccn" / "index.db", readonly=True) as store:
        assert store.get_meta("history_head") == shas[-1]


def _history_rows(store: Store) -> list[tuple]:
    return store.conn.execute(
        "SELECT cm.sha, cm.time, cm.is_fix, cc.path, cc.name FROM commit_changes cc "
        "JOIN commits cm ON cm.rowid = cc.commit_id ORDER BY 1, 4, 5").fetchall()


def test_history_read_early_in_a_thread_stores_what_the_plain_update_stores(history_repo, tmp_path):
    root, shas = history_repo
    with Store(tmp_path / "plain.db") as plain, Store(tmp_path / "early.db") as early:
        history.update_for_root(plain, root)
        finish = history.start_update(early, root)  # git reads while the caller does other work
        summary = finish(early)
        assert summary.head == shas[-1] and summary.added == 3
        assert _history_rows(early) == _history_rows(plain)
        # Another commit: read early, against the stored head, it adds just that one.
        commit(root, {"app/util.py": "def helper():\n    return 2\n"}, "Fix helper's value", 1_600_259_200)
        finish = history.start_update(early, root)
        assert finish(early).added == 1
        history.update_for_root(plain, root)
        assert _history_rows(early) == _history_rows(plain)


def test_history_read_early_is_read_again_when_the_stored_history_moved_meanwhile(history_repo, tmp_path):
    root, shas = history_repo
    git(root, "checkout", "-q", "-b", "side", shas[0])
    side = commit(root, {"app/side.py": "def side():\n    return 0\n"}, "A commit on another branch", 1_600_100_000)
    git(root, "checkout", "-q", "main")
    with Store(tmp_path / "h.db") as store:
        history.update_history(store, root, shas[0])
        finish = history.start_update(store, root)  # main's commits, read against the first commit
        history.update_history(store, root, side)  # ... but the stored history moves to the branch
        summary = finish(store)
        assert summary.head == shas[-1]
        assert {sha for (sha,) in store.conn.execute("SELECT sha FROM commits")} == set(shas)  # not the branch's


def test_commit_messages_get_vectors_and_say_which_files_past_fixes_like_a_query_changed(history_repo, tmp_path):
    """Semantic similar past fixes: the static model's vectors of the history's messages (made with
    the entities' vectors, only new commits on a later run; none with --no-embed), and per file
    the best similarity of a commit that changed it, the best three's mean and BugLocator's sum."""
    import math

    from nsccn.ranking.features import FILE_FEATURES, FUNCTION_FEATURES, candidates
    from nsccn.ranking import featurize
    from nsccn.vectors.commit_vectors import commits_embedded, semantic_evidence

    root, shas = history_repo
    db = tmp_path / "i.db"
    index_repository(root, db)
    paths = ["app/config.py", "app/util.py", "app/absent.py"]
    query = "The configuration file's handle stays open after it is parsed, and leaks"
    with Store(db) as store:
        assert store.conn.execute("SELECT count(*) FROM commit_vectors").fetchone()[0] == 3 and commits_embedded(store)
        sem = semantic_evidence(store, query, paths)
        assert set(sem) == {"app/config.py", "app/util.py"}  # a file no commit changed: no evidence
        # the leak fix changed config.py only: its message is the nearest to the query
        assert sem["app/config.py"][0] > sem["app/util.py"][0] and sem["app/config.py"][2] > sem["app/util.py"][2]
        # as of the second commit only the first counts (training on a repository's own history)
        first = store.conn.execute("SELECT time FROM commits WHERE sha=?", (shas[1],)).fetchone()[0]
        early = semantic_evidence(store, query, paths, before=first)
        assert early["app/config.py"] == early["app/util.py"]
        cands = candidates(store, query, *featurize(store, query))
        row = dict(zip(FILE_FEATURES, cands.file_rows[cands.files.index("app/config.py")]))
        assert row["hist_sem_max"] == pytest.approx(sem["app/config.py"][0], abs=1e-6)
        fn = dict(zip(FUNCTION_FEATURES, cands.function_rows[0]))
        assert not math.isnan(fn["hist_file_sem_max"])
    commit(root, {"app/util.py": "def helper():\n    return 2\n"}, "Fix helper returning the wrong value", 1_600_259_200)
    index_repository(root, db)
    with Store(db) as store:
        assert store.conn.execute("SELECT count(*) FROM commit_vectors").fetchone()[0] == 4
    bare = tmp_path / "bare.db"
    index_repository(root, bare, embed=False)
    with Store(bare) as store:
        assert semantic_evidence(store, query, paths) is None
        cands = candidates(store, query, *featurize(store, query))
        assert all(math.isnan(r[FILE_FEATURES.index("hist_sem_max")]) for r in cands.file_rows)


def test_commit_vectors_of_an_earlier_query_reading_are_made_again(history_repo, tmp_path):
    """A message is read as a query is, and its vector is stored under the model and that reading
    (`commit_vectors.vectors_key`): vectors of another reading (an index of an earlier nsccn, keyed
    by the model alone) are not read, and the next index makes them again."""
    from nsccn.vectors.commit_vectors import SHIPPED_KEY, commit_vector_count, commits_embedded, semantic_evidence
    from nsccn.vectors.static_file import QUERY_READING, STATIC_MODEL

    root, _ = history_repo
    db = tmp_path / "i.db"
    index_repository(root, db)
    assert SHIPPED_KEY == f"{STATIC_MODEL}+{QUERY_READING}"
    query = "The configuration file's handle stays open after it is parsed, and leaks"
    with Store(db) as store:
        with store.conn:
            store.conn.execute("UPDATE commit_vectors SET model_id = ?", (STATIC_MODEL,))
        assert not commits_embedded(store) and commit_vector_count(store) == 0
        assert semantic_evidence(store, query, ["app/config.py"]) is None
    index_repository(root, db)
    with Store(db) as store:
        assert commits_embedded(store) and commit_vector_count(store) == 3
        assert {r[0] for r in store.conn.execute("SELECT model_id FROM commit_vectors")} == {SHIPPED_KEY}
        assert semantic_evidence(store, query, ["app/config.py"])["app/config.py"][0] > 0
