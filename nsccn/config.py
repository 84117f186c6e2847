"""Settings, with defaults a user can override in `<index dir>/config.json`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec

INDEX_DIR = ".nsccn"
CONFIG_FILE = "config.json"


class Config(msgspec.Struct, kw_only=True):
    index_dir: str = INDEX_DIR  # relative to the repository root, or absolute
    max_file_size: int = 1 << 20  # bytes; larger files are skipped and counted
    ignore_patterns: list[str] = []  # gitignore syntax, on top of .gitignore files and the defaults
    use_gitignore: bool = True
    languages: list[str] = msgspec.field(default_factory=lambda: ["python"])
    watch_debounce_ms: int = 100
    rrf_k: int = 60
    max_traversal_depth: int = 10
    embedding_model: str = "nomic-ai/nomic-embed-text-v1.5"
    embedding_dim: int = 256
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

    def db_path(self, root: Path) -> Path:
        return index_dir(root, self) / "index.db"


def index_dir(root: Path, config: Config | None = None) -> Path:
    d = Path((config or Config()).index_dir)
    return d if d.is_absolute() else Path(root) / d


def load_config(root: Path) -> Config:
    """Defaults, then `<root>/.nsccn/config.json` if present, then NSCCN_INDEX_DIR from the environment."""
    path = Path(root) / INDEX_DIR / CONFIG_FILE
    config = Config()
    if path.exists():
        try:
            config = msgspec.json.decode(path.read_bytes(), type=Config)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ValueError(f"bad configuration in {path}: {exc}") from exc
    if os.environ.get("NSCCN_INDEX_DIR"):
        config = msgspec.structs.replace(config, index_dir=os.environ["NSCCN_INDEX_DIR"])
    return config


def config_json(config: Config) -> str:
    return json.dumps(msgspec.to_builtins(config), indent=2)
