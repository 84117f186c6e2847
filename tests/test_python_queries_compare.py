"""benchmarks/python_queries_compare.py on a small real repository: both indexes are real, the
Python extractor is swapped back after the query-core index, and the comparison names what each
side finds that the other does not (here: `super().m()` and a bare re-raise, which the core
cannot express)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nsccn.languages.python as walker

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import python_queries_compare as pqc  # noqa: E402

FILES = {
    "pkg/__init__.py": "",
    "pkg/base.py": "class Base:\n    def setup(self):\n        return 1\n",
    "pkg/app.py": (
        "import os\n"
        "from .base import Base\n\n\n"
        "class App(Base):\n"
        "    def setup(self):\n"
        "        self.items = []\n"
        "        try:\n"
        "            super().setup()\n"
        "        except ValueError:\n"
        "            raise\n"
        "        return os.environ['HOME']\n\n\n"
        "def main():\n"
        "    App().setup()\n"
    ),
}


def test_compare_finds_both_directions(tmp_path):
    repo = tmp_path / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    original = walker.PythonExtractor
    result = pqc.compare(repo, tmp_path / "out")
    assert walker.PythonExtractor is original  # the swap is undone
    rel = result["certain_edges"]["by_relation"]
    assert rel["INHERITS"]["both"] == 1 and rel["CALLS"]["both"] >= 1  # App(Base), main -> App
    assert ["method:pkg/app.py:App.setup", "CALLS", "method:pkg/base.py:Base.setup"] in rel["CALLS"]["walker_only_examples"]
    assert rel["PROPAGATES_ERROR"]["walker_only"] == 1  # the bare `raise` of the except's type
    assert rel["MUTATES"]["walker_only"] == 0 and rel["MUTATES"]["both"] == 1  # self.items
    assert result["entities"]["walker_only"] == 0 == result["entities"]["queries_only"]
    assert result["extraction"]["files"] == 3
    missed = (tmp_path / "out" / "repo-missed.txt").read_text()
    assert "W method:pkg/app.py:App.setup CALLS method:pkg/base.py:Base.setup" in missed
