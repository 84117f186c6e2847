"""Project files: what a language's build configuration says about how imports name files.

`go.mod` gives the module path Go imports start with, `tsconfig.json` / `jsconfig.json` the
`baseUrl` and `paths` aliases, `Cargo.toml` the crate name other crates `use`. They are indexed
like source files (so a change re-resolves the repository) but define no entities: their facts
are kept in the file's `imports` under keys starting with `project.`, for the resolver.
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib

from nsccn.model import ParsedFile

PREFIX = "project."
# A repository's tsconfig.json is untrusted: 20,000 `paths` aliases made every incremental index
# try each against each file (25.7 s for one file changed among 2,000). Real ones hold tens, a
# large monorepo some hundreds; past this many (alias, target) pairs the rest are left out, and
# the file is counted under CAPPED, as `nsccn index` and the writer's log say.
MAX_PATH_ALIASES = 1000
CAPPED = f"project file over its limits (the first {MAX_PATH_ALIASES} path aliases kept)"
_GO_MODULE = re.compile(r"^\s*module\s+\"?([^\s\"]+)\"?", re.M)


def parse_project_file(path: str, language: str, data: bytes, digest: str, mtime: float) -> ParsedFile:
    text = data.decode("utf-8", "replace")
    facts: dict[str, str] = {}
    error_lines: list[int] = []
    directory = posixpath.dirname(path)
    if language == "go.mod":
        m = _GO_MODULE.search(text)
        if m:
            facts["module"] = m.group(1)
    elif language == "tsconfig":
        options = _jsonc(text)
        if options is None:
            error_lines.append(1)
        else:
            compiler = options.get("compilerOptions") if isinstance(options.get("compilerOptions"), dict) else {}
            base = compiler.get("baseUrl")
            base_dir = _join(directory, base) if isinstance(base, str) else None
            if base_dir is not None:
                facts["baseUrl"] = base_dir
            paths = compiler.get("paths")
            if isinstance(paths, dict):
                root = base_dir if base_dir is not None else directory
                kept = 0
                for alias, targets in paths.items():
                    if isinstance(alias, str) and isinstance(targets, list):
                        joined = [_join(root, t) for t in targets if isinstance(t, str)][: MAX_PATH_ALIASES - kept]
                        if joined:
                            facts[f"paths:{alias}"] = "|".join(joined)
                            kept += len(joined)
                            if kept >= MAX_PATH_ALIASES:
                                total = sum(len(t) for t in paths.values() if isinstance(t, list))
                                facts["capped"] = f"{total} path aliases, the first {MAX_PATH_ALIASES} kept"
                                break
    elif language == "cargo":
        try:
            cargo = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            error_lines.append(1)
            cargo = {}
        package = cargo.get("package")
        if isinstance(package, dict) and isinstance(package.get("name"), str):
            lib = cargo.get("lib") if isinstance(cargo.get("lib"), dict) else {}
            facts["crate"] = str(lib.get("name") or package["name"]).replace("-", "_")
    return ParsedFile(
        path=path, language=language, content_hash=digest, size=len(data), mtime=mtime,
        line_count=len(text.splitlines()), module="", entities=[], refs=[],
        imports={PREFIX + k: v for k, v in facts.items()}, skeleton=text if len(text) < 4000 else text[:4000] + "\n...\n",
        error_lines=error_lines,
    )


def _join(directory: str, rel: str) -> str:
    joined = posixpath.normpath(posixpath.join(directory, rel))
    return "" if joined == "." else joined


def _jsonc(text: str) -> dict | None:
    """JSON with comments and trailing commas, as tsconfig.json allows."""
    out, i, n = [], 0, len(text)
    while i < n:  # drop comments outside strings
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)  # (not `"\n" in text[i:]`: a copy of the rest per comment)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    cleaned = re.sub(r",\s*([}\]])", r"\1", "".join(out))
    try:
        data = json.loads(cleaned)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def over_limits(pf: ParsedFile) -> str | None:
    """What a project file's parse left out (its facts say so), for the index summary: None or
    a line naming the file's cap."""
    note = pf.imports.get(PREFIX + "capped")
    return f"{pf.path}: {note}" if note else None
