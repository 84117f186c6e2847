"""The long tail as data (issue 15, item 3): a tags query per language over the compiled grammars
of tree-sitter-language-pack, read by `nsccn.languages.tags` into definitions and references."""

import subprocess
import sys
import textwrap

import pytest

from nsccn.languages.tags import LANGUAGES, TagsError, language_of, load, tags, tags_for_path

# file name, source, definitions (kind, name, first line, last line), references (kind, name, line) that must be found
SAMPLES = {
    "c": ("cart.c", """
        /* Add two numbers. */
        int add(int a, int b) {
            return helper(a) + b;
        }
        struct point { int x; };
        typedef int score_t;
        #define SQUARE(x) ((x) * (x))
        """, [("function", "add", 2, 4), ("class", "point", 5, 5), ("type", "score_t", 6, 6), ("macro", "SQUARE", 7, 8)],
        [("call", "helper", 3)]),
    "cpp": ("cart.cpp", """
        namespace shop {
        class Cart : public Base {
          public:
            int total();
        };
        int Cart::total() { return compute(1); }
        }
        """, [("module", "shop", 1, 7), ("class", "Cart", 2, 5), ("method", "total", 4, 4), ("method", "total", 6, 6)],
        [("implementation", "Base", 2), ("call", "compute", 6)]),
    "csharp": ("Cart.cs", """
        namespace Shop {
            /// <summary>A cart.</summary>
            public class Cart : IEnumerable {
                public Cart() { }
                public int Total() { return Compute(1); }
            }
            public interface IPriced { int Price(); }
        }
        """, [("module", "Shop", 1, 8), ("class", "Cart", 3, 6), ("method", "Cart", 4, 4), ("method", "Total", 5, 5),
              ("interface", "IPriced", 7, 7), ("method", "Price", 7, 7)],
        [("implementation", "IEnumerable", 3), ("call", "Compute", 5)]),
    "ruby": ("cart.rb", """
        module Shop
          class Cart < Base
            def total
              compute(1)
            end

            # Build one.
            def self.build; new; end
          end
        end
        """, [("module", "Shop", 1, 10), ("class", "Cart", 2, 9), ("method", "total", 3, 5), ("method", "build", 8, 8)],
        [("implementation", "Base", 2), ("call", "compute", 4)]),
    "php": ("Cart.php", """
        <?php
        namespace Shop;
        /** A cart. */
        class Cart extends Base implements Priced {
            public function total() { return $this->compute(1); }
        }
        function helper() { return new Cart(); }
        """, [("module", "Shop", 2, 2), ("class", "Cart", 4, 6), ("method", "total", 5, 5), ("function", "helper", 7, 7)],
        [("implementation", "Base", 4), ("implementation", "Priced", 4), ("call", "compute", 5), ("class", "Cart", 7)]),
    "kotlin": ("Cart.kt", """
        class Cart : Base() {
            fun total(): Int = compute(1)
        }
        object Registry
        fun main() { println(Cart().total()) }
        """, [("class", "Cart", 1, 3), ("method", "total", 2, 2), ("class", "Registry", 4, 4), ("function", "main", 5, 5)],
        [("implementation", "Base", 1), ("call", "compute", 2), ("call", "total", 5)]),
    "swift": ("Cart.swift", """
        class Cart: Base {
            init() {}
            func total() -> Int { return compute(1) }
        }
        protocol Priced { func price() -> Int }
        func main() { print(Cart().total()) }
        """, [("class", "Cart", 1, 4), ("method", "init", 2, 2), ("method", "total", 3, 3), ("interface", "Priced", 5, 5),
              ("method", "price", 5, 5), ("function", "main", 6, 6)],
        [("implementation", "Base", 1), ("call", "compute", 3), ("call", "total", 6)]),
    "scala": ("Cart.scala", """
        package shop
        trait Priced { def price: Int }
        class Cart extends Base {
          def total(): Int = compute(1)
        }
        object Main { def main(args: Array[String]): Unit = println(new Cart().total()) }
        """, [("module", "shop", 1, 1), ("interface", "Priced", 2, 2), ("class", "Cart", 3, 5), ("method", "total", 4, 4),
              ("class", "Main", 6, 6), ("method", "main", 6, 6)],
        [("implementation", "Base", 3), ("call", "compute", 4), ("class", "Cart", 6), ("call", "total", 6)]),
    "lua": ("cart.lua", """
        local function add(a, b)
          return helper(a) + b
        end
        function Cart:total()
          return self:compute(1)
        end
        M.sub = function(a) return a end
        """, [("function", "add", 1, 3), ("method", "total", 4, 6), ("function", "sub", 7, 7)],
        [("call", "helper", 2), ("call", "compute", 5)]),
    "elixir": ("cart.ex", """
        defmodule Shop.Cart do
          def total(cart) do
            compute(cart) |> round()
          end
          defp compute(c), do: Enum.sum(c)
          defmacro twice(x), do: x
        end
        """, [("module", "Shop.Cart", 1, 7), ("function", "total", 2, 4), ("function", "compute", 5, 5), ("macro", "twice", 6, 6)],
        [("call", "compute", 3), ("call", "round", 3), ("call", "sum", 5)]),
    "haskell": ("Shop.hs", """
        -- | Add two numbers.
        add :: Int -> Int -> Int
        add x y = helper x + y

        data Shape = Circle Double | Square Double
        class Describable a where
          describe :: a -> String
        main = print (add 1 2)
        """, [("function", "add", 3, 3), ("class", "Shape", 5, 5), ("interface", "Describable", 6, 7),
              ("method", "describe", 7, 7), ("function", "main", 8, 8)],
        [("call", "helper", 3), ("call", "add", 8)]),
    "elm": ("Shop.elm", """
        module Shop exposing (total)
        type alias Cart = { items : List Int }
        total : Cart -> Int
        total cart = List.sum cart.items |> helper
        """, [("module", "Shop", 1, 1), ("type", "Cart", 2, 2), ("function", "total", 4, 4)],
        [("type", "Cart", 3), ("call", "sum", 4)]),
    "ocaml": ("shop.ml", """
        (** Add two numbers. *)
        let add a b = helper a + b
        module Cart = struct
          let total c = add c 1
        end
        type shape = Circle | Square
        """, [("function", "add", 2, 2), ("module", "Cart", 3, 5), ("function", "total", 4, 4), ("type", "shape", 6, 6)],
        [("call", "helper", 2), ("call", "add", 4)]),
    "r": ("shop.R", """
        add <- function(a, b) {
          helper(a) + b
        }
        total = function(x) sum(x)
        """, [("function", "add", 1, 3), ("function", "total", 4, 4)], [("call", "helper", 2), ("call", "sum", 4)]),
    "bash": ("build.sh", """
        # Build it.
        build() {
          make all
        }
        build
        """, [("function", "build", 2, 4)], [("call", "make", 3), ("call", "build", 5)]),
    "solidity": ("Cart.sol", """
        contract Cart is Base {
            function total() public returns (uint) { return compute(1); }
        }
        interface Priced { function price() external returns (uint); }
        """, [("class", "Cart", 1, 3), ("method", "total", 2, 2), ("interface", "Priced", 4, 4)],
        [("implementation", "Base", 1), ("call", "compute", 2)]),
    "zig": ("point.zig", """
        /// Adds.
        pub fn add(a: i32, b: i32) i32 {
            return helper(a) + b;
        }
        const Point = struct {
            x: i32,
            pub fn norm(self: Point) i32 { return self.total(); }
        };
        """, [("function", "add", 2, 4), ("class", "Point", 5, 8), ("function", "norm", 7, 7)],
        [("call", "helper", 3), ("call", "total", 7)]),
    "julia": ("shapes.jl", '''
        """
        Add."""
        function add(a, b)
            helper(a) + b
        end
        sq(x) = x * x
        module Shapes
        struct Point
          x::Int
        end
        macro m(x) end
        end
        ''', [("function", "add", 3, 5), ("function", "sq", 6, 6), ("module", "Shapes", 7, 12), ("class", "Point", 8, 10),
              ("macro", "m", 11, 11)],
        [("call", "helper", 4)]),
}


def _source(text: str) -> bytes:
    return textwrap.dedent(text).lstrip("\n").encode()


def test_every_language_has_a_sample_and_its_query_compiles():
    assert sorted(SAMPLES) == sorted(LANGUAGES)
    for lang in LANGUAGES:
        load(lang)  # the grammar from the wheel and the query compiled against it


@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_definitions_and_references_per_language(lang):
    name, text, definitions, references = SAMPLES[lang]
    assert language_of(f"src/{name}") == lang
    found = tags_for_path(f"src/{name}", _source(text))
    assert [(d.kind, d.name, d.start_line, d.end_line) for d in found.definitions] == definitions
    refs = {(r.kind, r.name, r.line) for r in found.references}
    assert set(references) <= refs, sorted(refs)
    assert not {r.name for r in found.references} & {"def", "defp", "defmodule"}  # keywords are not calls


@pytest.mark.parametrize("lang, name, doc", [
    ("c", "add", "/* Add two numbers. */"), ("csharp", "Cart", "/// <summary>A cart.</summary>"),
    ("php", "Cart", "/** A cart. */"), ("ocaml", "add", "(** Add two numbers. *)"), ("bash", "build", "# Build it."),
    ("zig", "add", "/// Adds.\n"), ("julia", "add", '"""\nAdd."""'), ("ruby", "build", "# Build one."),
])
def test_doc_comments_come_with_their_definition(lang, name, doc):
    file, text, _, _ = SAMPLES[lang]
    assert [d.doc for d in tags_for_path(file, _source(text)).definitions if d.name == name][:1] == [doc]


def test_a_syntax_error_loses_only_the_broken_definition():
    found = tags("c", b"int ok(void) { return 1; }\nint broken( { \nint also_ok(void) { return f(); }\n")
    assert {"ok", "also_ok"} <= {d.name for d in found.definitions}


def test_unknown_languages_are_none_and_a_missing_query_is_a_clear_error():
    assert language_of("README") is None and language_of("notes.txt") is None
    assert tags_for_path("data/table.csv", b"a,b\n") is None
    with pytest.raises(TagsError, match="no tags query for 'cobol'"):
        tags("cobol", b"")


def test_grammars_load_without_the_network():
    # A fresh process where opening any socket fails: every grammar comes from the installed wheel.
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network used')\n"
        "socket.socket = refuse; socket.create_connection = refuse; socket.getaddrinfo = refuse\n"
        "from nsccn.languages.tags import LANGUAGES, load\n"
        "for lang in LANGUAGES: load(lang)\n"
        "print(len(LANGUAGES))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(LANGUAGES)
