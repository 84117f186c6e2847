"""Fixture repositories the tests write, and a helper to index them."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from nsccn.indexing.indexer import index_repository
from nsccn.serving.navigator import Navigator
from nsccn.store import Store

SHOP = {
    "shop/__init__.py": "from .models import User\n",
    "shop/config.py": """
        import os

        DATABASE_URL = os.environ.get("DATABASE_URL", "sqlite://")
        MAX_ITEMS = 10
        settings = {"debug": False}
    """,
    "shop/errors.py": """
        class ShopError(Exception):
            \"\"\"Base error of the shop.\"\"\"

        class ValidationError(ShopError):
            pass
    """,
    "shop/base.py": """
        class Model:
            registry = []

            def save(self):
                \"\"\"Persist the model.\"\"\"
                self.validate()
                Model.registry.append(self)

            def validate(self):
                return True
    """,
    "shop/models.py": """
        import os
        from .base import Model
        from .errors import ValidationError as VErr
        from . import config
        from .config import MAX_ITEMS

        COUNTER = 0


        class User(Model):
            \"\"\"A customer.\"\"\"

            def __init__(self, name: str, email: str = "") -> None:
                self.name = name
                self.items = []

            @property
            def display(self) -> str:
                return self.name.title()

            def validate(self):
                if not self.name:
                    raise VErr("name required")
                return super().validate()

            def add_item(self, item):
                if len(self.items) >= MAX_ITEMS:
                    raise ValueError("too many")
                self.items.append(item)
                self.save()

            def connect(self):
                url = config.DATABASE_URL
                home = os.getenv("HOME")
                debug = config.settings["debug"]
                return url, home, debug


        def bump():
            global COUNTER
            COUNTER += 1


        def make_user(name):
            def helper(n):
                return n.strip()
            try:
                return User(helper(name))
            except VErr:
                raise
    """,
    "shop/service.py": """
        import json
        import shop.models as m
        from shop.models import make_user


        def register(name):
            \"\"\"Register a new user and dump it as JSON.\"\"\"
            user = make_user(name)
            m.bump()
            return json.dumps({"name": user.name})
    """,
}


def write_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(textwrap.dedent(content).lstrip("\n"))
    return root


def indexed_git_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    """`files` written under `root`, committed once (a real git history for change impact), indexed."""
    write_repo(root, files)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    index_repository(root, workers=1, embed=False)
    return root


def impact_of_edit(root: Path, rel: str, old: str, new: str, **kw):
    """`nsccn impact` of the working tree with `old` replaced by `new` once in `rel`, the file put
    back after."""
    file = root / rel
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new, 1))
    nav = Navigator(root)
    try:
        return nav.impact(**kw)
    finally:
        nav.close()
        file.write_text(text)


@pytest.fixture(autouse=True)
def no_user_config(tmp_path_factory, monkeypatch):
    """The user's own ~/.config/nsccn/config.json (index_dir) must not steer the tests."""
    monkeypatch.setenv("NSCCN_CONFIG", str(tmp_path_factory.getbasetemp() / "no-user-config.json"))
    for var in ("NSCCN_INDEX_DIR", "NSCCN_PIPELINE_TCP"):
        monkeypatch.delenv(var, raising=False)
    # A pipeline `nsccn serve` starts outlives its session by this much: none may outlive a test.
    monkeypatch.setenv("NSCCN_PIPELINE_LINGER_S", "0")


@pytest.fixture
def shop_repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo", SHOP)


@pytest.fixture
def shop_index(shop_repo: Path):
    index_repository(shop_repo, workers=1)
    store = Store(shop_repo / ".nsccn" / "index.db", readonly=True)
    yield shop_repo, store
    store.close()


def edges_of(store: Store, source: str, relation: str) -> dict[str, tuple[float, str]]:
    return {e.target: (e.confidence, e.resolution) for e in store.edges_from(source, [relation])}


def pathological_traceback(size: int = 1 << 20, depth: int = 120) -> str:
    """A ~`size`-character traceback whose frames have long paths, distinct functions and a real
    innermost frame (billing/tax.py apply_tax): the shape of query that took 252 s in one search
    (issue 12, item 5). Deterministic, so every run sends the same query."""
    deep = "/".join(f"dir{i}" for i in range(depth))
    out, n, i = ["Traceback (most recent call last):\n"], 0, 0
    while n < size:
        line = f'  File "/usr/lib/{deep}/pkg{i}/site/module_{i}.py", line {i + 1}, in handler_{i}\n    do_thing_{i}(x)\n'
        out.append(line)
        n += len(line)
        i += 1
    out.append('  File "/srv/app/billing/tax.py", line 7, in apply_tax\nValueError: negative amount\n')
    return "".join(out)


def stop_group(proc) -> None:
    """Stop a process started in its own session (`start_new_session=True`) and all it started."""
    import os
    import signal
    import subprocess

    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
