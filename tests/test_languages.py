"""Full languages end to end: fixture repositories in JavaScript, TypeScript/TSX, Go, Java and Rust,
indexed by the real indexer (tree-sitter queries, resolver, SQLite): every entity kind and edge kind
with its resolution, syntax errors, skeletons and windows, detection and the `languages` setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_repo
from nsccn.config import ConfigError, load_config
from nsccn.indexing.indexer import index_repository
from nsccn.languages import language_for, shebang_language
from nsccn.serving.navigator import Navigator
from nsccn.store import Store

JS = {
    'src/app.js': """\
import Base, { add as plus } from './lib/util';
const helpers = require('./lib/util');
const { double } = require('./lib/util.js');

// Config from the environment
const PORT = process.env.PORT || 3000;

class App extends Base {
  constructor() {
    super("app");
    this.count = 0;
  }
  run(x) {
    this.count += 1;
    if (!x) throw new TypeError("no x");
    return plus(x, helpers.add(1, 2)) + double(x) + this.helper();
  }
  helper() { return process.env["DEBUG"]; }
}

function main() {
  const app = new App();
  app.run(1);
  [1, 2].map(function (y) { return y * 2; });
}

module.exports = main;
""",
    'src/lib/util.js': """\
/**
 * Adds two numbers.
 */
export function add(a, b) {
  return a + b;
}

export const double = (x) => add(x, x);

export default class Base {
  constructor(name) { this.name = name; }
  greet() { return "hi " + this.name; }
}
""",
}

GO = {
    'go.mod': """\
module example.com/app

go 1.21
""",
    'internal/store/put.go': """\
package store

import "fmt"

// Put sets key.
func (s *Store) Put(key, value string) error {
	if key == "" {
		return fmt.Errorf("empty key")
	}
	s.data[key] = value
	s.touch()
	return nil
}

func (s *Store) touch() { s.hits = 0 }
""",
    'internal/store/store.go': """\
package store

import "errors"

// ErrMissing is returned when a key is absent.
var ErrMissing = errors.New("missing")

// Base holds shared state.
type Base struct{ hits int }

// Store keeps values.
type Store struct {
	Base
	data map[string]string
}

// Getter reads values.
type Getter interface {
	Get(key string) (string, error)
}

// New makes a Store.
func New() *Store { return &Store{data: map[string]string{}} }

// Get returns the value of key.
func (s *Store) Get(key string) (string, error) {
	s.hits++
	v, ok := s.data[key]
	if !ok {
		return "", errors.New("missing " + key)
	}
	return v, nil
}
""",
    'main.go': """\
package main

import (
	"os"

	"example.com/app/internal/store"
)

func main() {
	st := store.New()
	if err := st.Put("home", os.Getenv("HOME")); err != nil {
		panic(err)
	}
	run(st)
}

func run(g store.Getter) { g.Get("home") }
""",
}

JAVA = {
    'src/main/java/com/ex/core/Circle.java': """\
package com.ex.core;

import java.io.IOException;
import com.ex.util.Strings;

/**
 * A circle.
 */
@Deprecated
public class Circle extends Base implements Shape {
    private double r;

    /** Makes a circle. */
    public Circle(double r) { this.r = r; }

    @Override
    public double area() { return Math.PI * r * r; }

    /** Loads a circle. */
    public static Circle load(String name) throws IOException {
        String home = System.getenv("HOME");
        if (home == null) {
            throw new IllegalStateException("no home");
        }
        Circle c = new Circle(1.0);
        c.grow(Strings.trim(name).length());
        return c;
    }

    void grow(int by) { this.r += by; helper(); }

    static class Builder {
        Circle build() { return new Circle(2.0); }
    }
}

class Base { void helper() {} }
""",
    'src/main/java/com/ex/core/Shape.java': """\
package com.ex.core;

/** A shape. */
public interface Shape {
    double area();
}
""",
    'src/main/java/com/ex/util/Strings.java': """\
package com.ex.util;

/** String helpers. */
public final class Strings {
    /** Trims a value. */
    public static String trim(String s) { return s.trim(); }
}
""",
}

RUST = {
    'Cargo.toml': """\
[package]
name = "geo-kit"
version = "0.1.0"
""",
    'src/errors.rs': """\
/// What can go wrong.
#[derive(Debug)]
pub enum GeoError {
    Missing,
    Negative,
}
""",
    'src/lib.rs': """\
//! Geometry.
pub mod shapes;
mod errors;

use crate::shapes::{Circle, Area};
use crate::errors::GeoError;

/// Total area of circles.
pub fn total(cs: &[Circle]) -> Result<f64, GeoError> {
    let scale = std::env::var("GEO_SCALE").map_err(|_| GeoError::Missing)?;
    let _ = scale;
    let mut t = 0.0;
    for c in cs {
        t += c.area();
    }
    check(t)?;
    Ok(t)
}

fn check(t: f64) -> Result<(), GeoError> {
    if t < 0.0 {
        return Err(GeoError::Negative);
    }
    Ok(())
}
""",
    'src/shapes/mod.rs': """\
/// Something with an area.
pub trait Area: Named {
    fn area(&self) -> f64;
}

pub trait Named { fn name(&self) -> String; }

/// A circle.
pub struct Circle {
    pub r: f64,
}

impl Circle {
    /// Makes one.
    pub fn new(r: f64) -> Self { Self { r } }
    pub fn grow(&mut self, by: f64) { self.r += by; self.check(); }
    fn check(&self) { if self.r < 0.0 { panic!("negative"); } }
}

impl Area for Circle {
    fn area(&self) -> f64 { 3.14 * self.r * self.r }
}
""",
}
TS = {
    "tsconfig.json": """\
{
  // comments and trailing commas, as TypeScript allows
  "compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"],},},
}
""",
    "src/lib/types.ts": """\
/** Something that can be drawn. */
export interface Drawable extends Named {
  draw(scale: number): string;
}
export interface Named { name: string }
export type Point = { x: number; y: number };
export enum Color { Red, Green }
export abstract class Shape {
  abstract area(): number;
}
""",
    "src/lib/circle.ts": """\
import { Drawable, Shape } from '@/lib/types';

/** A circle. */
export class Circle extends Shape implements Drawable {
  name = "circle";
  constructor(private r: number) { super(); }
  area(): number { return 3.14 * this.r * this.r; }
  draw(scale: number): string {
    if (scale < 0) { throw new RangeError("scale"); }
    this.r = this.r * scale;
    return render(this.name);
  }
}

export const render = (s: string): string => `<${s}>`;
""",
    "src/view.tsx": """\
import { Circle } from './lib/circle';
import * as types from '@/lib/types';

export function View(props: { r: number }) {
  const c = new Circle(props.r);
  return <div>{c.draw(1)}</div>;
}
""",
}

# A TypeScript front end calling a Python back end over HTTP: two graphs, each complete, none across.
POLYGLOT = {
    "web/api.ts": """\
export async function fetchUsers(): Promise<string[]> {
  const res = await fetch("/api/users");
  return parse(await res.text());
}
function parse(body: string): string[] { return JSON.parse(body); }
""",
    "server/app.py": """\
from server.db import load_users


def users():
    \"\"\"GET /api/users\"\"\"
    return load_users()
""",
    "server/db.py": """\
def load_users():
    return ["ada"]
""",
    "server/__init__.py": "",
}


def index(tmp_path: Path, files: dict) -> Store:
    repo = write_repo(tmp_path / "repo", files)
    index_repository(repo, workers=1)
    return Store(repo / ".nsccn" / "index.db", readonly=True)


def edges(store: Store) -> set[tuple[str, str, str, str]]:
    return {(e.relation, e.source, e.target, e.resolution) for e in store.all_edges()}


def kinds(store: Store) -> dict[str, str]:
    return dict(store.conn.execute("SELECT id, kind FROM entities"))


EXPECTED = {
    "js": (JS, {
        "class:src/app.js:App", "method:src/app.js:App.run", "func:src/app.js:main", "func:src/lib/util.js:add",
        "func:src/lib/util.js:double", "method:src/lib/util.js:Base.constructor", "module:src/lib/util.js:src/lib/util",
    }, {
        ("CALLS", "method:src/app.js:App.run", "func:src/lib/util.js:add", "import"),  # ES import, aliased
        ("CALLS", "method:src/app.js:App.run", "func:src/lib/util.js:double", "import"),  # destructured require
        ("CALLS", "method:src/app.js:App.run", "method:src/app.js:App.helper", "self+MRO"),
        ("CALLS", "func:src/lib/util.js:double", "func:src/lib/util.js:add", "same_module"),  # arrow function
        ("CALLS", "func:src/app.js:main", "method:src/app.js:App.constructor", "same_module+constructor"),
        ("IMPORTS", "module:src/app.js:src/app", "class:src/lib/util.js:Base", "import"),  # the default export
        ("IMPORTS", "module:src/app.js:src/app", "module:src/lib/util.js:src/lib/util", "import"),  # require
        ("INHERITS", "class:src/app.js:App", "class:src/lib/util.js:Base", "import"),
        ("MUTATES", "method:src/app.js:App.run", "attr:src/app.js:App.count", "self"),
        ("READS_CONFIG", "module:src/app.js:src/app", "env:PORT", "environment"),
        ("READS_CONFIG", "method:src/app.js:App.helper", "env:DEBUG", "environment"),
        ("PROPAGATES_ERROR", "method:src/app.js:App.run", "ext:builtins.TypeError", "builtin"),
        ("CONTAINS", "class:src/app.js:App", "method:src/app.js:App.run", "structural"),
    }),
    "ts": (TS, {
        "class:src/lib/types.ts:Drawable", "method:src/lib/types.ts:Drawable.draw", "class:src/lib/types.ts:Point",
        "class:src/lib/types.ts:Color", "class:src/lib/types.ts:Shape", "method:src/lib/types.ts:Shape.area",
        "func:src/lib/circle.ts:render", "method:src/lib/circle.ts:Circle.draw", "func:src/view.tsx:View",
    }, {
        ("INHERITS", "class:src/lib/circle.ts:Circle", "class:src/lib/types.ts:Shape", "import"),  # via tsconfig paths
        ("INHERITS", "class:src/lib/circle.ts:Circle", "class:src/lib/types.ts:Drawable", "import"),  # implements
        ("INHERITS", "class:src/lib/types.ts:Drawable", "class:src/lib/types.ts:Named", "same_module"),
        ("CALLS", "method:src/lib/circle.ts:Circle.draw", "func:src/lib/circle.ts:render", "same_module"),
        ("CALLS", "func:src/view.tsx:View", "method:src/lib/circle.ts:Circle.constructor", "import+constructor"),
        ("IMPORTS", "module:src/view.tsx:src/view", "module:src/lib/types.ts:src/lib/types", "import"),
        ("MUTATES", "method:src/lib/circle.ts:Circle.draw", "attr:src/lib/circle.ts:Circle.r", "self"),
        ("PROPAGATES_ERROR", "method:src/lib/circle.ts:Circle.draw", "ext:builtins.RangeError", "builtin"),
    }),
    "go": (GO, {
        "class:internal/store/store.go:Store", "class:internal/store/store.go:Getter", "func:internal/store/store.go:New",
        "method:internal/store/store.go:Store.Get", "method:internal/store/put.go:Store.Put", "func:main.go:main",
    }, {
        ("CALLS", "func:main.go:main", "func:internal/store/store.go:New", "import"),  # through go.mod's module path
        ("CALLS", "method:internal/store/put.go:Store.Put", "method:internal/store/put.go:Store.touch", "self+MRO"),
        ("CALLS", "func:main.go:main", "ext:os.Getenv", "external"),
        ("INHERITS", "class:internal/store/store.go:Store", "class:internal/store/store.go:Base", "same_module"),
        ("IMPORTS", "module:main.go:main", "ext:os", "external"),
        ("MUTATES", "method:internal/store/store.go:Store.Get", "attr:internal/store/store.go:Store.hits", "self"),
        ("READS_CONFIG", "func:main.go:main", "env:HOME", "environment"),
        ("PROPAGATES_ERROR", "method:internal/store/put.go:Store.Put", "ext:fmt.Errorf", "external"),
        ("PROPAGATES_ERROR", "method:internal/store/store.go:Store.Get", "ext:errors.New", "external"),
        ("PROPAGATES_ERROR", "func:main.go:main", "ext:builtins.panic", "builtin"),
    }),
    "java": (JAVA, {
        "class:src/main/java/com/ex/core/Circle.java:Circle", "class:src/main/java/com/ex/core/Circle.java:Circle.Builder",
        "method:src/main/java/com/ex/core/Circle.java:Circle.Circle", "class:src/main/java/com/ex/core/Shape.java:Shape",
        "module:src/main/java/com/ex/core/Shape.java:com.ex.core",
    }, {
        ("CALLS", "method:src/main/java/com/ex/core/Circle.java:Circle.load",
         "method:src/main/java/com/ex/util/Strings.java:Strings.trim", "import"),
        ("CALLS", "method:src/main/java/com/ex/core/Circle.java:Circle.grow",
         "method:src/main/java/com/ex/core/Circle.java:Base.helper", "self+MRO"),  # implicit this, inherited
        ("CALLS", "method:src/main/java/com/ex/core/Circle.java:Circle.Builder.build",
         "method:src/main/java/com/ex/core/Circle.java:Circle.Circle", "same_module+constructor"),
        ("INHERITS", "class:src/main/java/com/ex/core/Circle.java:Circle",
         "class:src/main/java/com/ex/core/Shape.java:Shape", "same_package"),
        ("IMPORTS", "module:src/main/java/com/ex/core/Circle.java:com.ex.core",
         "class:src/main/java/com/ex/util/Strings.java:Strings", "import"),
        ("MUTATES", "method:src/main/java/com/ex/core/Circle.java:Circle.grow",
         "attr:src/main/java/com/ex/core/Circle.java:Circle.r", "self"),
        ("READS_CONFIG", "method:src/main/java/com/ex/core/Circle.java:Circle.load", "env:HOME", "environment"),
        ("PROPAGATES_ERROR", "method:src/main/java/com/ex/core/Circle.java:Circle.load", "ext:java.io.IOException", "external"),
        ("PROPAGATES_ERROR", "method:src/main/java/com/ex/core/Circle.java:Circle.load",
         "ext:builtins.IllegalStateException", "builtin"),
    }),
    "rust": (RUST, {
        "class:src/shapes/mod.rs:Circle", "class:src/shapes/mod.rs:Area", "class:src/errors.rs:GeoError",
        "method:src/shapes/mod.rs:Circle.new", "method:src/shapes/mod.rs:Circle.area", "method:src/shapes/mod.rs:Area.area",
        "func:src/lib.rs:total", "module:src/shapes/mod.rs:crate.shapes",
    }, {
        ("CALLS", "method:src/shapes/mod.rs:Circle.grow", "method:src/shapes/mod.rs:Circle.check", "self+MRO"),
        ("CALLS", "func:src/lib.rs:total", "func:src/lib.rs:check", "same_module"),
        ("IMPORTS", "module:src/lib.rs:crate", "module:src/shapes/mod.rs:crate.shapes", "import"),  # mod shapes;
        ("IMPORTS", "module:src/lib.rs:crate", "class:src/shapes/mod.rs:Circle", "import"),  # use crate::shapes::{..}
        ("INHERITS", "class:src/shapes/mod.rs:Circle", "class:src/shapes/mod.rs:Area", "same_module"),  # impl Area for
        ("INHERITS", "class:src/shapes/mod.rs:Area", "class:src/shapes/mod.rs:Named", "same_module"),  # supertrait
        ("MUTATES", "method:src/shapes/mod.rs:Circle.grow", "attr:src/shapes/mod.rs:Circle.r", "self"),
        ("READS_CONFIG", "func:src/lib.rs:total", "env:GEO_SCALE", "environment"),
        ("PROPAGATES_ERROR", "func:src/lib.rs:total", "func:src/lib.rs:check", "same_module"),  # check(t)?
        ("PROPAGATES_ERROR", "func:src/lib.rs:check", "class:src/errors.rs:GeoError", "import"),  # Err(GeoError::..)
        ("PROPAGATES_ERROR", "method:src/shapes/mod.rs:Circle.check", "ext:builtins.panic", "builtin"),
    }),
}


@pytest.mark.parametrize("lang", sorted(EXPECTED))
def test_entities_and_edges(tmp_path, lang):
    files, entities, expected = EXPECTED[lang]
    with index(tmp_path, files) as store:
        have = kinds(store)
        assert entities <= set(have), sorted(entities - set(have))
        got = edges(store)
        assert expected <= got, sorted(expected - got)
        # certain resolutions are 1.0 (0.9 for an inherited method), guesses by name less
        for how, conf in ((e.resolution, e.confidence) for e in store.all_edges()):
            if how.startswith(("unique_name", "ambiguous")):
                assert conf < 1.0, (how, conf)
            elif how == "typed":  # a receiver's stated type: certain, high, or its type found by name only
                assert conf in (1.0, 0.9, 0.75), (how, conf)
            else:
                assert how.split("+constructor")[0] in CERTAIN and conf >= 0.9, (how, conf)


CERTAIN = {"import", "same_module", "same_package", "same_scope", "self+MRO", "structural", "external", "builtin",
           "environment", "self", "same_module+MRO", "global", "super+MRO", "self+literal"}


def test_kinds_of_definitions(tmp_path):
    """Structs, interfaces, traits and enums are classes; Go methods attach to their receiver's type
    wherever they are written, Rust methods to their impl's type, Java nested classes to their class."""
    with index(tmp_path, {**GO, **{f"rs/{k}": v for k, v in RUST.items()}}) as store:
        have = kinds(store)
        sig = dict(store.conn.execute("SELECT id, signature FROM entities"))
    assert have["method:internal/store/put.go:Store.Put"] == "method"
    assert sig["class:internal/store/store.go:Getter"] == "type Getter interface"
    assert sig["class:rs/src/shapes/mod.rs:Area"].startswith("pub trait Area")
    assert have["method:rs/src/shapes/mod.rs:Circle.grow"] == "method"


@pytest.mark.parametrize("lang,path,broken", [
    ("js", "src/bad.js", "function broken( {\n  return 1;\n\nfunction fine() { return 2; }\n"),
    ("ts", "src/bad.ts", "function broken(a: number {\n  return 1;\n}\n\nfunction fine(): number { return 2; }\n"),
    ("go", "bad/bad.go", "package bad\n\nfunc broken( {\n\treturn\n}\n\nfunc fine() int { return 2 }\n"),
    ("java", "Bad.java", "class Bad {\n  void broken( { }\n  int fine() { return 2; }\n}\n"),
    ("rust", "src/bad.rs", "fn broken( {\n}\n\nfn fine() -> i32 { 2 }\n"),
])
def test_syntax_error_keeps_the_rest(tmp_path, lang, path, broken):
    files = dict(EXPECTED[lang][0])
    files[path] = broken
    with index(tmp_path, files) as store:
        errors = store.conn.execute("SELECT error_lines FROM files WHERE path=?", (path,)).fetchone()[0]
        names = {n for (n,) in store.conn.execute("SELECT name FROM entities WHERE path=?", (path,))}
        assert errors != "[]"
        assert "fine" in names
        assert EXPECTED[lang][1] <= set(kinds(store))  # the other files are whole


@pytest.mark.parametrize("lang,path,entity,kept,cut", [
    ("js", "src/lib/util.js", "func:src/lib/util.js:add", ["* Adds two numbers.", "export function add(a, b) { ... }"],
     "return a + b"),
    ("ts", "src/lib/circle.ts", "method:src/lib/circle.ts:Circle.draw", ["draw(scale: number): string { ... }"],
     "throw new RangeError"),
    ("go", "internal/store/store.go", "method:internal/store/store.go:Store.Get",
     ["// Get returns the value of key.", "func (s *Store) Get(key string) (string, error) { ... }", "type Store struct {"],
     "s.hits++"),
    ("java", "src/main/java/com/ex/core/Circle.java", "method:src/main/java/com/ex/core/Circle.java:Circle.load",
     ["/** Loads a circle. */", "public static Circle load(String name) throws IOException { ... }"], "getenv"),
    ("rust", "src/shapes/mod.rs", "method:src/shapes/mod.rs:Circle.new",
     ["/// Makes one.", "pub fn new(r: f64) -> Self { ... }", "    fn area(&self) -> f64;"], "self.r += by"),
])
def test_skeleton_and_window(tmp_path, lang, path, entity, kept, cut):
    files = EXPECTED[lang][0]
    repo = write_repo(tmp_path / "repo", files)
    index_repository(repo, workers=1)
    nav = Navigator(repo)
    skeleton = nav.skeleton(path, tokens=False).skeleton
    for line in kept:
        assert line in skeleton
    assert cut not in skeleton
    win = nav.window(entity, context_lines=0)
    doc_line = kept[0].strip().lstrip("/*# ").split()[0]
    assert doc_line in win.code.splitlines()[0] or doc_line in win.code  # the doc comment is in the window


def test_polyglot_stays_two_graphs(tmp_path):
    with index(tmp_path, POLYGLOT) as store:
        got = edges(store)
        langs = dict(store.conn.execute("SELECT path, language FROM files"))
    assert langs["web/api.ts"] == "typescript" and langs["server/app.py"] == "python"
    assert ("CALLS", "func:web/api.ts:fetchUsers", "func:web/api.ts:parse", "same_module") in got
    assert ("CALLS", "func:server/app.py:users", "func:server/db.py:load_users", "import") in got

    def side(ident: str) -> str | None:
        for path in langs:
            if f":{path}:" in ident:
                return langs[path]
        return None

    for rel, src, tgt, _ in got:
        if side(tgt) is not None:
            assert side(src) == side(tgt), (rel, src, tgt)  # no edge crosses the HTTP boundary


def test_detection_and_languages_setting(tmp_path):
    assert language_for("a/b.tsx") == "tsx" and language_for("x.rs") == "rust" and language_for("go.mod") == "go.mod"
    assert language_for("bin/tool") is None
    assert shebang_language(b"#!/usr/bin/env node\n") == "javascript"
    assert shebang_language(b"#!/usr/bin/python3.12\n") == "python"
    files = {**POLYGLOT, "bin/serve": "#!/usr/bin/env node\nfunction start() { return 1; }\n", "notes.txt": "text"}
    with index(tmp_path / "all", files) as store:
        langs = dict(store.conn.execute("SELECT path, language FROM files"))
    assert langs["bin/serve"] == "javascript" and langs["notes.txt"] == "text"  # no language: read as text
    only_python = {**files, ".nsccn/config.json": '{"languages": ["python"]}'}
    with index(tmp_path / "py", only_python) as store:
        langs = dict(store.conn.execute("SELECT path, language FROM files"))
    assert set(langs.values()) == {"python"}


def test_unknown_language_is_one_line(tmp_path):
    repo = write_repo(tmp_path / "repo", {"a.py": "x = 1\n", ".nsccn/config.json": '{"languages": ["cobol"]}'})
    with pytest.raises(ConfigError, match="unknown language 'cobol'"):
        load_config(repo)
    r = subprocess.run([sys.executable, "-m", "nsccn.cli", "index", str(repo)], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown language 'cobol'" in r.stderr and "Traceback" not in r.stderr
