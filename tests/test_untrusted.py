"""A repository is untrusted input, second round (issue 45, items 1-4, 11, 12): hostile fixture
repositories written by each test, through the real command (`nsccn index`, in-process and the
pipeline), real git and a real SQLite file.

* an index the repository ships (`.nsccn/index.db`, with a forged entity and a trigger) is not
  ours: it is rebuilt from the files, and no reader answers from it;
* a shipped `.git/config` cannot make our git calls run a program or fetch;
* a file name that is not UTF-8 costs that file only;
* a one-line minified file grows the index linearly;
* a hostile commit message is capped and cannot forge a change; a symlinked `.git` is not read;
* a setting out of its range is one warning and is not used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import write_repo
from nsccn.config import load_settings

PY = sys.executable


def nsccn(*args, timeout=120, **kw):
    return subprocess.run([PY, "-m", "nsccn.cli", *args], capture_output=True, text=True, timeout=timeout, **kw)


APP = {"app.py": "def handler(x):\n    return helper(x)\n\n\ndef helper(x):\n    return x\n"}


# -- item 12: every setting has a range --------------------------------------------------------


def test_a_setting_out_of_range_is_one_warning_and_not_used(tmp_path):
    repo = write_repo(tmp_path / "r", {**APP, ".nsccn/config.json": json.dumps(
        {"rrf_k": -1, "max_file_size": 0, "watch_debounce_ms": -5, "result_token_cap": 10**12})})
    s = load_settings(repo)
    assert (s.config.rrf_k, s.config.max_file_size, s.config.watch_debounce_ms) == (60, 1 << 20, 100)
    assert s.config.result_token_cap == 8000 and "rrf_k" not in s.sources
    assert len(s.refused) == 4 and any("ignoring 'rrf_k' = -1" in line and "must be 1 to 10000" in line for line in s.refused)
    r = nsccn("index", str(repo), "--in-process")
    assert r.returncode == 0 and r.stderr.count("ignoring 'rrf_k' = -1") == 1, r.stderr
    r = nsccn("search", "handler helper", "--root", str(repo))  # divided by rrf_k + rank: ZeroDivisionError
    assert r.returncode == 0 and "func:app.py:handler" in r.stdout and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("ignoring 'rrf_k'") == 1
