"""Settings, and who may set which.

A repository is untrusted input: a cloned repository's own `<root>/.nsccn/config.json` may say
what to index and how to rank (`REPOSITORY_KEYS`), nothing that opens sockets, moves files or
loads code. Those are set by the user: the user config file (`$NSCCN_CONFIG`, else
`$XDG_CONFIG_HOME/nsccn/config.json`, else `~/.config/nsccn/config.json`, with an optional
`"repositories": {"/abs/path": {...}}` section per repository), the environment
(`NSCCN_INDEX_DIR`, `NSCCN_PIPELINE_LINGER_S`) and command-line flags (a Ray cluster is named on
the command line alone: `nsccn index --ray ADDRESS`).

Layers, later wins: defaults, user config, repository config (its keys only), the user
config's section for this repository, environment, command line. `load_settings` also says
where each setting came from (`nsccn status`) and what was refused.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from nsccn.vectors.static_file import STATIC_ALIASES, STATIC_MODEL, is_static_model  # noqa: F401  (read from here too)

INDEX_DIR = ".nsccn"
CONFIG_FILE = "config.json"
# In an index directory outside the repository (an absolute `index_dir`), the repository it
# indexes: its location no longer says so, and from a subdirectory, or for another repository,
# the same directory must not be taken for a fresh index of where one stands.
INDEX_ROOT_FILE = "root"


class ConfigError(ValueError):
    """A configuration file or variable that cannot be used; the message names it."""


class IndexDirInUse(ConfigError):
    """An index directory outside the repository that holds another repository's index."""


class Config(msgspec.Struct, kw_only=True):
    index_dir: str = INDEX_DIR  # relative to the repository root, or absolute
    max_file_size: int = 1 << 20  # bytes; larger files are skipped and counted
    ignore_patterns: list[str] = []  # gitignore syntax, on top of .gitignore files and the defaults
    use_gitignore: bool = True
    # "all", or names from nsccn.languages.NAMES (python, javascript, ..., the long tail: c, ruby, ..., and text)
    languages: list[str] = msgspec.field(default_factory=lambda: ["all"])
    watch_debounce_ms: int = 100
    rrf_k: int = 60
    max_traversal_depth: int = 10
    # The static code embedding (on by default, ~0.1 ms of CPU an entity); a transformer
    # ("minilm-code", "nomic-ai/nomic-embed-text-v1.5") is a user setting, ~100 ms an entity.
    embedding_model: str = STATIC_MODEL
    embedding_dim: int = 0  # 0: the model's own (nomic: 256 of its 768)
    embedding_batch_size: int = 32
    embedding_threads: int = 0  # 0: let the runtime choose
    # Entities of test and documentation files get vectors too (semantic search over tests);
    # false skips them (a third of a large repository's entities) where only the code matters.
    # Honoured by `nsccn index --embed`; the pipeline embeds everything.
    embed_test_files: bool = True
    quantization_threshold_entities: int = 50_000
    result_token_cap: int = 8000  # no tool answer is larger than this
    tool_time_budget_s: float = 20.0  # an MCP tool call running longer is stopped with a clear error
    parser_workers: int = 0  # 0: one per core
    # The pipeline's bulk work (parsers, writer, embedder's bulk jobs) runs this much nicer than
    # the queries, so a search answers at its idle speed while an index builds (0: no yielding).
    bulk_nice: int = 10
    # A pipeline started by `nsccn serve` stays this long after its last MCP client leaves, so
    # watching and embedding go on between sessions (a user setting: it keeps processes alive).
    pipeline_linger_s: float = 600.0
    # The git history (the newest commits) is indexed as ranking evidence when the root is a work tree.
    history: bool = True
    history_max_commits: int = 3000

    def db_path(self, root: Path) -> Path:
        return index_dir(root, self) / "index.db"


# What a repository's own config.json may set: what to index, how to rank and answer. Everything
# else (index_dir, pipeline, the embedding model and resources) is the user's.
REPOSITORY_KEYS = frozenset({
    "max_file_size", "ignore_patterns", "use_gitignore", "languages", "watch_debounce_ms", "rrf_k",
    "max_traversal_depth", "embed_test_files", "quantization_threshold_entities", "result_token_cap", "history",
})
FIELDS = frozenset(Config.__struct_fields__)
# Every number a layer may set, and its range (inclusive): out of range is one warning and the
# layer's value is dropped (the previous layer's value, else the default, stands). A repository's
# `rrf_k: -1` made every search divide by zero; a huge `max_file_size` would read any file whole.
# The pipeline's actors that do bulk work: they run `bulk_nice` nicer (the watcher does not).
BULK_KINDS = frozenset({"parser", "writer", "embedder"})

RANGES: dict[str, tuple[float, float]] = {
    "max_file_size": (1, 64 << 20),
    "watch_debounce_ms": (0, 60_000),
    "rrf_k": (1, 10_000),
    "max_traversal_depth": (1, 100),
    "embedding_dim": (1, 8192),
    "embedding_batch_size": (1, 4096),
    "embedding_threads": (0, 1024),
    "quantization_threshold_entities": (0, 1_000_000_000),
    "result_token_cap": (100, 1_000_000),
    "tool_time_budget_s": (0.001, 3600.0),
    "parser_workers": (0, 1024),
    "bulk_nice": (0, 19),
    "pipeline_linger_s": (0.0, 30 * 86400.0),
    "history_max_commits": (0, 1_000_000),
}
# Settings that were retired: said once when a configuration still has them, never an error.
RETIRED_PIPELINE = ("the pipeline's tcp transport was retired: other machines are used through Ray"
                    " (`nsccn index --ray ADDRESS`)")


@dataclass
class Settings:
    config: Config
    sources: dict[str, str] = field(default_factory=dict)  # setting -> where it came from
    refused: list[str] = field(default_factory=list)  # one line per setting refused (not the repository's, out of range)
    user_file: Path | None = None
    repository_file: Path | None = None

    def describe(self) -> dict:
        """For `nsccn status`: where each setting that is not a default came from (index_dir
        always: it says where the files go), the files read, what was refused."""
        values = msgspec.to_builtins(self.config)
        shown = [k for k in Config.__struct_fields__ if k in self.sources or k == "index_dir"]
        return {
            "settings": {k: {"value": values[k], "from": self.sources.get(k, "default")} for k in shown},
            "files": {"user": str(self.user_file), "repository": str(self.repository_file)},
            "refused": list(self.refused),
        }


def user_config_path() -> Path:
    if os.environ.get("NSCCN_CONFIG"):
        return Path(os.environ["NSCCN_CONFIG"]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "nsccn" / CONFIG_FILE


def repository_config_path(root: Path) -> Path:
    return Path(root) / INDEX_DIR / CONFIG_FILE


def _read_layer(path: Path) -> dict:
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"bad configuration in {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"bad configuration in {path}: expected a JSON object")
    return data


def _validated(layer: dict, where: str) -> dict:
    """The layer's known settings, type-checked (the error names the file and the key)."""
    known = {k: v for k, v in layer.items() if k in FIELDS}
    try:
        msgspec.convert(known, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"bad configuration in {where}: {exc}") from None
    return known


def _out_of_range(layer: dict, where: str) -> list[str]:
    """One line per number of `layer` outside its range (NaN included), each removed from it."""
    lines = []
    for key, (lo, hi) in RANGES.items():
        if key in layer and not lo <= layer[key] <= hi:
            lines.append(f"ignoring {key!r} = {layer.pop(key)!r} in {where}: must be {lo} to {hi}")
    return lines


def load_settings(root: Path, overrides: dict | None = None) -> Settings:
    """The configuration for the repository at `root`, with where each setting came from."""
    root = Path(root)
    merged: dict = {}
    sources: dict[str, str] = {}
    refused: list[str] = []

    def apply(layer: dict, source: str) -> None:
        layer = _validated(layer, source)
        refused.extend(_out_of_range(layer, source))
        for k, v in layer.items():
            merged[k] = v
            sources[k] = source

    upath = user_config_path()
    user = _read_layer(upath)
    if "pipeline" in user:
        refused.append(f"ignoring 'pipeline' in {upath}: {RETIRED_PIPELINE}")
    apply({k: v for k, v in user.items() if k != "repositories"}, f"user config {upath}")

    rpath = repository_config_path(root)
    repo = _read_layer(rpath)
    if "pipeline" in repo:
        refused.append(f"ignoring 'pipeline' in {rpath}: {RETIRED_PIPELINE}")
    for k in sorted(set(repo) & FIELDS - REPOSITORY_KEYS):
        refused.append(
            f"ignoring {k!r} in {rpath}: a repository may set only what to index and how to rank;"
            f" set {k!r} in {upath} if you mean it"
        )
    apply({k: v for k, v in repo.items() if k in REPOSITORY_KEYS}, f"repository config {rpath}")

    per_repo = user.get("repositories") or {}
    if isinstance(per_repo, dict):
        try:
            here = str(root.resolve())
        except OSError:
            here = str(root)
        for key, layer in per_repo.items():
            if isinstance(layer, dict) and str(Path(key).expanduser().resolve()) == here:
                apply(layer, f"user config {upath} (repositories[{key!r}])")

    if os.environ.get("NSCCN_INDEX_DIR"):
        apply({"index_dir": os.environ["NSCCN_INDEX_DIR"]}, "environment NSCCN_INDEX_DIR")
    if os.environ.get("NSCCN_PIPELINE_TCP"):
        refused.append(f"ignoring NSCCN_PIPELINE_TCP: {RETIRED_PIPELINE}")
    if os.environ.get("NSCCN_PIPELINE_LINGER_S"):
        try:
            linger = float(os.environ["NSCCN_PIPELINE_LINGER_S"])
        except ValueError:
            raise ConfigError(f"NSCCN_PIPELINE_LINGER_S {os.environ['NSCCN_PIPELINE_LINGER_S']!r}: expected seconds, "
                              "e.g. 600") from None
        apply({"pipeline_linger_s": linger}, "environment NSCCN_PIPELINE_LINGER_S")
    if overrides:
        apply(overrides, "command line")

    config = msgspec.convert(merged, Config)
    from nsccn.languages import enabled  # names only: no grammar is loaded

    try:
        enabled(config.languages)
    except ValueError as exc:
        raise ConfigError(f"bad configuration in {sources.get('languages', 'defaults')}: {exc}") from None
    return Settings(config, sources, refused, upath, rpath)


_warned: set[str] = set()


def warn_refused(settings: Settings) -> None:
    """Say once per process, on stderr (never stdout: it may carry MCP), what was refused."""
    for line in settings.refused:
        if line not in _warned:
            _warned.add(line)
            print(f"nsccn: warning: {line}", file=sys.stderr, flush=True)


def load_config(root: Path, overrides: dict | None = None) -> Config:
    settings = load_settings(root, overrides)
    warn_refused(settings)
    return settings.config


def index_dir(root: Path, config: Config | None = None) -> Path:
    d = Path((config or Config()).index_dir)
    return d if d.is_absolute() else Path(root) / d


def indexed_root(config: Config) -> Path | None:
    """The repository an index directory outside any repository holds (its `INDEX_ROOT_FILE`),
    None for an index directory inside its repository or one that has not indexed yet."""
    d = Path(config.index_dir)
    if not d.is_absolute():
        return None
    try:
        text = (d / INDEX_ROOT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text) if text else None


def ensure_index_dir(root: Path, config: Config) -> Path:
    """The index directory, created 0700 (an existing one must be a real directory of ours).
    One outside the repository records which repository it indexes, and refuses another while
    it holds an index (indexing another tree there would drop every file of the first)."""
    from nsccn.private import create_private_once, private_dir, write_private

    d = private_dir(index_dir(root, config))
    # `git status` stays clean (as `.pytest_cache/` does it): everything here is ours, but a
    # repository's own config.json, which its owners may well commit.
    create_private_once(d / ".gitignore", f"# written by nsccn: the index is no part of the repository\n*\n!{CONFIG_FILE}\n".encode())
    if Path(config.index_dir).is_absolute():
        root = Path(root).resolve()
        held = indexed_root(config)
        if held is not None and held != root and config.db_path(root).exists():
            raise IndexDirInUse(
                f"{d} holds the index of {held}, not of {root}: run nsccn in {held} (or any directory in it), "
                f"or give {root} an index directory of its own (NSCCN_INDEX_DIR, `index_dir`)")
        if held != root:
            write_private(d / INDEX_ROOT_FILE, f"{root}\n".encode())
    return d


def config_json(config: Config) -> str:
    return json.dumps(msgspec.to_builtins(config), indent=2)
