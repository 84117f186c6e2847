"""The long tail end to end (issue 15, item 3): each language with a tags query, indexed through
`index_repository` by the same core as the full languages, has its definitions as entities,
a CALLS edge resolved by name, a skeleton and windows; a file of no language is text, found by
file-level search and listed in the map."""

import textwrap

import pytest

from nsccn.indexing.indexer import index_repository
from nsccn.languages import language_for
from nsccn.languages.tags import LANGUAGES
from nsccn.serving.navigator import Navigator
from nsccn.query.streams import file_bm25
from nsccn.store import Store

from conftest import write_repo

# language: (path, source, definitions (id, first line, last line), CALLS (source id, target id),
#            a line of a body the skeleton elides or None, a line it keeps)
# Names carry the language so that, in one repository of all of them, a name resolves to one place.
CASES = {
    "c": ("src/cart.c", """
        /* Sum of the items. */
        int c_total(int n) {
            return c_helper(n) + 1;
        }
        static int c_helper(int n) { return n * 2; }
        struct c_point { int x; };
        """, [("func:src/cart.c:c_total", 1, 4), ("func:src/cart.c:c_helper", 5, 5), ("class:src/cart.c:c_point", 6, 6)],
        ("func:src/cart.c:c_total", "func:src/cart.c:c_helper"), "return c_helper(n) + 1;", "int c_total(int n) { ... }"),
    "cpp": ("src/cart.cpp", """
        namespace shop {
        class CppCart {
          public:
            int total() { return cpp_compute(2); }
        };
        int cpp_compute(int x) { return x; }
        }
        """, [("class:src/cart.cpp:shop", 1, 7), ("class:src/cart.cpp:shop.CppCart", 2, 5),
              ("method:src/cart.cpp:shop.CppCart.total", 4, 4), ("func:src/cart.cpp:shop.cpp_compute", 6, 6)],
        ("method:src/cart.cpp:shop.CppCart.total", "func:src/cart.cpp:shop.cpp_compute"), "return x;", "class CppCart {"),
    "csharp": ("src/Cart.cs", """
        namespace Shop {
            /// <summary>A cart.</summary>
            public class CsCart {
                public int Total() {
                    return CsCompute(1);
                }
                public static int CsCompute(int x) { return x; }
            }
        }
        """, [("class:src/Cart.cs:Shop", 1, 9), ("class:src/Cart.cs:Shop.CsCart", 2, 8),
              ("method:src/Cart.cs:Shop.CsCart.Total", 4, 6), ("method:src/Cart.cs:Shop.CsCart.CsCompute", 7, 7)],
        ("method:src/Cart.cs:Shop.CsCart.Total", "method:src/Cart.cs:Shop.CsCart.CsCompute"), "return CsCompute(1);",
        "/// <summary>A cart.</summary>"),
    "ruby": ("lib/cart.rb", """
        module Shop
          class RbCart
            # The total.
            def total
              rb_compute(1)
            end
          end
        end

        def rb_compute(x)
          x
        end
        """, [("class:lib/cart.rb:Shop", 1, 8), ("class:lib/cart.rb:Shop.RbCart", 2, 7),
              ("method:lib/cart.rb:Shop.RbCart.total", 3, 6), ("func:lib/cart.rb:rb_compute", 10, 12)],
        ("method:lib/cart.rb:Shop.RbCart.total", "func:lib/cart.rb:rb_compute"), "rb_compute(1)", "# The total."),
    "php": ("src/Cart.php", """
        <?php
        class PhpCart {
            public function total() { return php_compute(1); }
        }
        function php_compute($x) {
            return $x;
        }
        """, [("class:src/Cart.php:PhpCart", 2, 4), ("method:src/Cart.php:PhpCart.total", 3, 3),
              ("func:src/Cart.php:php_compute", 5, 7)],
        ("method:src/Cart.php:PhpCart.total", "func:src/Cart.php:php_compute"), "return $x;", "function php_compute($x) { ... }"),
    "kotlin": ("src/Cart.kt", """
        class KtCart {
            fun total(): Int {
                return ktCompute(1)
            }
        }
        fun ktCompute(x: Int): Int = x
        """, [("class:src/Cart.kt:KtCart", 1, 5), ("method:src/Cart.kt:KtCart.total", 2, 4),
              ("func:src/Cart.kt:ktCompute", 6, 6)],
        ("method:src/Cart.kt:KtCart.total", "func:src/Cart.kt:ktCompute"), "return ktCompute(1)", "fun total(): Int"),
    "swift": ("src/Cart.swift", """
        class SwiftCart {
            func total() -> Int {
                return swiftCompute(1)
            }
        }
        func swiftCompute(_ x: Int) -> Int { return x }
        """, [("class:src/Cart.swift:SwiftCart", 1, 5), ("method:src/Cart.swift:SwiftCart.total", 2, 4),
              ("func:src/Cart.swift:swiftCompute", 6, 6)],
        ("method:src/Cart.swift:SwiftCart.total", "func:src/Cart.swift:swiftCompute"), "return swiftCompute(1)",
        "func total() -> Int"),
    "scala": ("src/Cart.scala", """
        class ScalaCart {
          def total(): Int = {
            scalaCompute(1)
          }
        }
        object Util {
          def scalaCompute(x: Int): Int = x
        }
        """, [("class:src/Cart.scala:ScalaCart", 1, 5), ("method:src/Cart.scala:ScalaCart.total", 2, 4),
              ("class:src/Cart.scala:Util", 6, 8), ("method:src/Cart.scala:Util.scalaCompute", 7, 7)],
        ("method:src/Cart.scala:ScalaCart.total", "method:src/Cart.scala:Util.scalaCompute"), "scalaCompute(1)",
        "def total(): Int"),
    "lua": ("src/cart.lua", """
        local function lua_compute(x)
          return x
        end
        function lua_total()
          return lua_compute(1)
        end
        """, [("func:src/cart.lua:lua_compute", 1, 3), ("func:src/cart.lua:lua_total", 4, 6)],
        ("func:src/cart.lua:lua_total", "func:src/cart.lua:lua_compute"), "return lua_compute(1)", "function lua_total()"),
    "elixir": ("lib/cart.ex", """
        defmodule Shop.ExCart do
          def total(cart) do
            ex_compute(cart)
          end
          defp ex_compute(c), do: c
        end
        """, [("class:lib/cart.ex:Shop.ExCart", 1, 6), ("func:lib/cart.ex:Shop.ExCart.total", 2, 4),
              ("func:lib/cart.ex:Shop.ExCart.ex_compute", 5, 5)],
        ("func:lib/cart.ex:Shop.ExCart.total", "func:lib/cart.ex:Shop.ExCart.ex_compute"), "ex_compute(cart)",
        "def total(cart) do"),
    "haskell": ("src/Shop.hs", """
        module Shop where

        hsTotal x = hsCompute x + 1

        hsCompute y = y * 2
        """, [("func:src/Shop.hs:hsTotal", 3, 3), ("func:src/Shop.hs:hsCompute", 5, 5)],
        ("func:src/Shop.hs:hsTotal", "func:src/Shop.hs:hsCompute"), None, "hsTotal x = hsCompute x + 1"),
    "elm": ("src/Shop.elm", """
        module Shop exposing (elmTotal)

        elmTotal cart =
            elmCompute cart

        elmCompute c = c
        """, [("func:src/Shop.elm:elmTotal", 3, 4), ("func:src/Shop.elm:elmCompute", 6, 6)],
        ("func:src/Shop.elm:elmTotal", "func:src/Shop.elm:elmCompute"), None, "elmTotal cart"),
    "ocaml": ("src/shop.ml", """
        (** Double it. *)
        let ml_compute x = x * 2

        let ml_total c = ml_compute c
        """, [("func:src/shop.ml:ml_compute", 1, 2), ("func:src/shop.ml:ml_total", 4, 4)],
        ("func:src/shop.ml:ml_total", "func:src/shop.ml:ml_compute"), None, "(** Double it. *)"),
    "r": ("R/shop.R", """
        r_compute <- function(x) {
          x * 2
        }
        r_total <- function(c) {
          r_compute(c)
        }
        """, [("func:R/shop.R:r_compute", 1, 3), ("func:R/shop.R:r_total", 4, 6)],
        ("func:R/shop.R:r_total", "func:R/shop.R:r_compute"), "r_compute(c)", "r_total <- function(c)"),
    "bash": ("scripts/build.sh", """
        # Compile it.
        sh_compile() {
          make all
        }
        sh_release() {
          sh_compile
        }
        """, [("func:scripts/build.sh:sh_compile", 1, 4), ("func:scripts/build.sh:sh_release", 5, 7)],
        ("func:scripts/build.sh:sh_release", "func:scripts/build.sh:sh_compile"), "make all", "# Compile it."),
    "solidity": ("contracts/Cart.sol", """
        contract SolCart {
            function total() public returns (uint) {
                return solCompute(1);
            }
            function solCompute(uint x) public returns (uint) { return x; }
        }
        """, [("class:contracts/Cart.sol:SolCart", 1, 6), ("method:contracts/Cart.sol:SolCart.total", 2, 4),
              ("method:contracts/Cart.sol:SolCart.solCompute", 5, 5)],
        ("method:contracts/Cart.sol:SolCart.total", "method:contracts/Cart.sol:SolCart.solCompute"), "return solCompute(1);",
        "contract SolCart"),
    "zig": ("src/point.zig", """
        /// Adds.
        fn zigTotal(a: i32) i32 {
            return zigCompute(a);
        }
        fn zigCompute(a: i32) i32 {
            return a;
        }
        """, [("func:src/point.zig:zigTotal", 1, 4), ("func:src/point.zig:zigCompute", 5, 7)],
        ("func:src/point.zig:zigTotal", "func:src/point.zig:zigCompute"), "return zigCompute(a);", "/// Adds."),
    "julia": ("src/shapes.jl", '''
        """
        The total.
        """
        function jl_total(x)
            jl_compute(x)
        end
        jl_compute(y) = y * 2
        ''', [("func:src/shapes.jl:jl_total", 1, 6), ("func:src/shapes.jl:jl_compute", 7, 7)],
        ("func:src/shapes.jl:jl_total", "func:src/shapes.jl:jl_compute"), "jl_compute(x)", "function jl_total(x)"),
}
TEXT_FILES = {"docs/notes.txt": "The quokka deployment runbook lives here.\n",
              "db/schema.sql": "CREATE TABLE wombat_ledger (id INTEGER);\n",
              "conf/app.zzz": "flamingo_threshold = 3\n"}


def test_every_long_tail_language_has_a_case():
    assert set(CASES) == set(LANGUAGES)
    for lang, (path, *_rest) in CASES.items():
        assert language_for(path) == lang


@pytest.fixture(scope="module")
def tail_repo(tmp_path_factory):
    files = {path: textwrap.dedent(source).lstrip("\n") for path, source, *_ in CASES.values()}
    root = write_repo(tmp_path_factory.mktemp("tail") / "repo", {**files, **TEXT_FILES})
    summary = index_repository(root)
    assert not any(why.startswith("extraction failed") for why in summary.skipped)
    nav = Navigator(root)
    yield root, nav
    nav.close()


@pytest.mark.parametrize("lang", sorted(CASES))
def test_definitions_edges_skeleton_window(tail_repo, lang):
    root, nav = tail_repo
    path, _source, defs, (caller, callee), elided, kept = CASES[lang]
    store = nav.store
    assert store.file(path)["language"] == lang
    rows = {e.id: e for e in store.entities_in_file(path)}
    for eid, first, last in defs:
        assert eid in rows, (eid, sorted(rows))
        assert (rows[eid].start_line, rows[eid].end_line) == (first, last), eid
    module = [e for e in rows.values() if e.kind == "module"]
    assert len(module) == 1
    # methods nest in their class (parent by byte range), definitions in their module
    for eid, *_ in defs:
        parent = rows[eid].parent
        assert parent in rows, (eid, parent)
        if eid.startswith("method:"):
            assert parent.startswith("class:") and eid.split(":", 2)[2].startswith(parent.split(":", 2)[2] + ".")
    edges = {(e.target, e.resolution) for e in store.edges_from(caller, ["CALLS"])}
    assert any(t == callee for t, _ in edges), (caller, edges)
    how = next(r for t, r in edges if t == callee)
    assert how in ("same_module", "unique_name", "same_scope"), how
    skeleton = nav.skeleton(path, tokens=False).skeleton
    assert kept in skeleton, skeleton
    if elided is not None:
        assert elided not in skeleton, skeleton
    for eid, first, last in defs:
        assert rows[eid].name in skeleton
    w = nav.window(caller, context_lines=0)
    assert (w.start, w.end) == (rows[caller].start_line, rows[caller].end_line)
    assert rows[caller].name in w.code and kept.split("(")[0].split(" {")[0].strip() in w.code + skeleton


def test_unknown_languages_are_text_in_file_search_and_the_map(tail_repo):
    root, nav = tail_repo
    store = nav.store
    for path in TEXT_FILES:
        f = store.file(path)
        assert f is not None and f["language"] == "text", path
        assert store.entities_in_file(path) == []
    assert file_bm25(store, ["quokka"]) == ["docs/notes.txt"]
    assert file_bm25(store, ["wombat_ledger"]) == ["db/schema.sql"]
    assert file_bm25(store, ["flamingo"]) == ["conf/app.zzz"]
    assert file_bm25(store, ["quokka"], code_only=True) == []  # localization ranks code files only
    listed = nav.repo_map(max_tokens=4000).map
    for path in TEXT_FILES:
        assert f"{path}:" in listed
    assert listed.index("src/cart.c:") < listed.index("docs/notes.txt:")  # code first
    assert "quokka" in nav.skeleton("docs/notes.txt", tokens=False).skeleton


def test_languages_setting_names_long_tail_and_text(tmp_path):
    files = {"a.rb": "def a\nend\n", "b.c": "int b(void) { return 0; }\n", "notes.md": "words\n", "x.py": "y = 1\n"}
    root = write_repo(tmp_path / "r", {**files, ".nsccn/config.json": '{"languages": ["ruby", "text"]}'})
    index_repository(root)
    with Store(root / ".nsccn" / "index.db", readonly=True) as store:
        langs = dict(store.conn.execute("SELECT path, language FROM files"))
    assert langs == {"a.rb": "ruby", "notes.md": "text"}


def test_shebang_scripts_and_dotfiles(tmp_path):
    """A script in a dot directory by its `#!` line (its module named by its whole path); dotfiles
    (`.env`, `.gitignore`) are not read as text."""
    root = write_repo(tmp_path / "r", {".ci/run": "#!/bin/sh\nci_step() {\n  echo hi\n}\nci_step\n",
                                      ".env": "SECRET=1\n", "README": "Plain words.\n"})
    summary = index_repository(root)
    assert not any(why.startswith("extraction failed") for why in summary.skipped)
    with Store(root / ".nsccn" / "index.db", readonly=True) as store:
        langs = dict(store.conn.execute("SELECT path, language FROM files"))
        assert langs == {".ci/run": "bash", "README": "text"}
        assert store.entity("func:.ci/run:ci_step") is not None
        assert store.entity("module:.ci/run:.ci/run") is not None


def test_text_files_never_move_the_scores_of_code_files(tmp_path):
    """Docs and data have their own full-text table: adding a README full of the query's words
    leaves every code file's BM25 score (what localization and the ranker read) as it was."""
    code = {"shop/cart.py": "def total(items):\n    return sum(i.price for i in items)\n",
            "shop/tax.py": "def apply_tax(amount):\n    return amount * 1.2\n"}
    scores = []
    for name, extra in (("plain", {}), ("with_docs", {"README.md": "total price tax " * 50})):
        root = write_repo(tmp_path / name, {**code, **extra})
        index_repository(root)
        with Store(root / ".nsccn" / "index.db", readonly=True) as store:
            scores.append(store.conn.execute(
                "SELECT i.path, bm25(files_fts, 3.0, 1.0) FROM files_fts f JOIN files i ON i.id = f.rowid "
                "WHERE files_fts MATCH 'total OR price OR tax' ORDER BY i.path").fetchall())
            if extra:
                assert file_bm25(store, ["price"])[0] == "README.md"
                assert "README.md" not in file_bm25(store, ["price"], code_only=True)
    assert scores[0] == scores[1] and len(scores[0]) == 2
