"""How other files name a file, beyond the module name its own parse gives: the resolver's hook
for each language's import rules that need the whole repository (project files, packages).

  Go      a package is a directory: every file of it shares one module name, and imports name it
          by the module path of the nearest `go.mod` plus the directory
  Java    a package is shared by its files (`package a.b;` in each)
  TS/JS   `tsconfig.json` `paths` aliases and `baseUrl` give a file more names (`@/util`)
  Rust    `Cargo.toml` gives the crate's name, which other crates `use` in place of `crate`
"""

from __future__ import annotations

import posixpath
from collections import defaultdict

from nsccn.languages.javascript import module_of
from nsccn.languages.project import MAX_PATH_ALIASES, PREFIX

SHARED_MODULE = frozenset(("go", "java"))  # languages whose module (package) spans many files
_JS = frozenset(("javascript", "typescript", "tsx"))
# Bounds on what tsconfig aliases cost every resolve (each incremental index builds a Project):
# aliases from all project files together, and names one file gets from them.
MAX_ALIASES = 4 * MAX_PATH_ALIASES
MAX_ALIAS_NAMES = 32


class Project:
    """The facts of every project file of the repository."""

    def __init__(self, rows: list[tuple[str, str, dict]]):  # (path, language, imports)
        self.go_modules: dict[str, str] = {}  # directory of a go.mod -> module path
        self.crates: dict[str, str] = {}  # directory of a Cargo.toml -> crate name
        self.aliases: list[tuple[str, str]] = []  # (alias prefix, directory prefix) from tsconfig paths
        self.exact: dict[str, list[str]] = defaultdict(list)  # module -> aliases naming it alone (no `*`)
        self.base_urls: list[str] = []
        self.tried = 0  # alias lookups made by names(): what the bounds keep in check
        for path, language, facts in rows:
            directory = posixpath.dirname(path)
            if language == "go.mod" and PREFIX + "module" in facts:
                self.go_modules[directory] = facts[PREFIX + "module"]
            elif language == "cargo" and PREFIX + "crate" in facts:
                self.crates[directory] = facts[PREFIX + "crate"]
            elif language == "tsconfig":
                for key, value in facts.items():
                    if key.startswith(PREFIX + "paths:"):
                        alias = key[len(PREFIX + "paths:"):]
                        for target in value.split("|"):
                            if len(self.aliases) + len(self.exact) < MAX_ALIASES:
                                self._alias(alias, target)
                if PREFIX + "baseUrl" in facts:
                    self.base_urls.append(facts[PREFIX + "baseUrl"])
        # Aliases by their target (a directory prefix): a file looks up its own prefixes, one per
        # distinct target length, instead of trying every alias.
        self._by_target: dict[str, list[str]] = defaultdict(list)
        for alias, target in self.aliases:
            self._by_target[target].append(alias)
        self._target_lengths = sorted({len(t) for t in self._by_target})

    def _alias(self, alias: str, target: str) -> None:
        """One `paths` entry. A target names files as an import would, extension and all
        (`"pkg": ["./src/index.ts"]`, `"pkg/*": ["./src/*.ts"]`): the module names without them.
        An alias without `*` names its one target; with one, every file under the prefix."""
        if "*" not in alias:
            self.exact[module_of(target)].append(alias)
            return
        head, _, tail = target.partition("*")
        tail = module_of("x" + tail)[1:] if tail else ""
        if tail in ("", "/"):  # `*`, `*.ts`, `*/index.ts`: the module names line up with the paths
            self.aliases.append((alias.partition("*")[0], head))

    def names(self, path: str, language: str, module: str) -> list[str]:
        """The module names, other than `module`, that imports may use for this file."""
        if language == "go":
            directory = posixpath.dirname(path)
            d = directory
            while True:
                if d in self.go_modules:
                    rel = directory[len(d):].lstrip("/")
                    return [f"{self.go_modules[d]}/{rel}" if rel else self.go_modules[d]]
                if not d:
                    return []
                d = posixpath.dirname(d)
        if language in _JS:
            out = []
            for n in self._target_lengths:
                if n > len(module) or len(out) >= MAX_ALIAS_NAMES:
                    break
                self.tried += 1
                for alias in self._by_target.get(module[:n], ())[: MAX_ALIAS_NAMES - len(out)]:
                    out.append(alias + module[n:].lstrip("/") if n else alias + module)
            out.extend(self.exact.get(module, ())[:MAX_ALIAS_NAMES])
            for base in self.base_urls:
                if not base:
                    out.append(module)
                elif module.startswith(base + "/"):
                    out.append(module[len(base) + 1:])
            return [n for n in out if n and n != module]
        if language == "rust":
            head, sep, rest = module.partition(".")
            if head == "crate" or head.endswith("/crate"):
                crate_dir = head[: -len("/crate")] if head != "crate" else ""
                name = self.crates.get(crate_dir)
                if name:
                    return [name + sep + rest]
        return []


def package_groups(files: list[tuple[str, str, str]]) -> dict[str, list[str]]:
    """path -> every path of the same package, for the languages whose packages span files."""
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for path, language, module in files:
        if language in SHARED_MODULE:
            key = (language, module, posixpath.dirname(path) if language == "go" else "")
            groups[key].append(path)
    return {p: members for members in groups.values() if len(members) > 1 for p in members}
