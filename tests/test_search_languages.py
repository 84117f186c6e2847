"""Search across languages (issue 15, item 4): other languages' stack traces read into the same
frames as a Python traceback, their paths and scoped names, identifier splitting, test files."""

import pytest

from conftest import write_repo
from nsccn.indexing.indexer import index_repository
from nsccn.query.fusion import search
from nsccn.query.query_analysis import MAX_FRAMES, analyze_query
from nsccn.store import Store
from nsccn.text import index_terms, split_identifier

GO = """panic: runtime error: index out of range [3] with length 3

goroutine 1 [running]:
github.com/acme/shop/cart.(*Cart).Total(0xc000010000, {0x1, 0x2})
\t/home/u/shop/cart/cart.go:42 +0x1d
github.com/acme/shop/cart.apply.func1(...)
\t/home/u/shop/cart/tax.go:12
main.main()
\t/home/u/shop/main.go:9 +0x25
exit status 2
"""
JAVA = """Exception in thread "main" java.lang.IllegalStateException: boom
\tat com.acme.shop.Cart.total(Cart.java:42)
\tat com.acme.shop.Cart$Line.<init>(Cart.java:80)
\tat app//com.acme.shop.Main.main(Main.java:9)
Caused by: java.lang.NullPointerException
\tat com.acme.shop.Tax.apply(Tax.java:7)
\tat com.acme.shop.Tax.lambda$rate$0(Tax.java:12)
\t... 3 more
"""
NODE = """TypeError: Cannot read properties of undefined (reading 'x')
    at Object.total (/app/src/cart.js:10:5)
    at new Cart (/app/src/cart.js:3:9)
    at Foo.bar [as baz] (src/foo.ts:4:1)
    at async Object.<anonymous> (/app/src/main.ts:3:1)
    at src/boot.ts:3:1
    at node:internal/main/run_main_module:28:49
"""
RUST = """thread 'main' panicked at src/cart.rs:10:5:
called `Option::unwrap()` on a `None` value
stack backtrace:
   0: rust_begin_unwind
             at /rustc/abc/library/std/src/panicking.rs:645:5
   3: shop::cart::Cart::total::h0123456789abcdef
             at ./src/cart.rs:10:5
   4: shop::main::{{closure}}
             at ./src/main.rs:4:5
   5: <shop::Cart as core::fmt::Display>::fmt
             at ./src/lib.rs:4:5
"""
CSHARP = """System.InvalidOperationException: boom
   at Shop.Cart.Total(Decimal x) in C:\\src\\Shop\\Cart.cs:line 42
   at Shop.Program.Main(String[] args) in C:\\src\\Shop\\Program.cs:line 9
"""
RUBY = """app/models/cart.rb:10:in 'Cart#total': boom (RuntimeError)
\tfrom app/models/cart.rb:3:in `block (2 levels) in <class:Cart>'
\tfrom bin/run.rb:2:in `<main>'
"""
PHP = """PHP Fatal error:  Uncaught Exception: boom in /app/src/Cart.php:12
Stack trace:
#0 /app/src/Shop.php(30): Cart->total()
#1 {main}
  thrown in /app/src/Cart.php on line 12
"""


@pytest.mark.parametrize("trace, frames", [
    # Innermost last, as for a Python traceback; a closure (`func1`) is part of its function.
    (GO, [("/home/u/shop/main.go", 9, "main"), ("/home/u/shop/cart/tax.go", 12, "apply"),
          ("/home/u/shop/cart/cart.go", 42, "Total")]),
    # The package is the folder; a constructor is named as its class; the root cause comes last.
    (JAVA, [("com/acme/shop/Main.java", 9, "main"), ("com/acme/shop/Cart.java", 80, "Line"),
            ("com/acme/shop/Cart.java", 42, "total"), ("com/acme/shop/Tax.java", 12, "rate"),
            ("com/acme/shop/Tax.java", 7, "apply")]),
    # Anonymous functions name only a line; node's own frames name no file of the repository.
    (NODE, [("src/boot.ts", 3, ""), ("/app/src/main.ts", 3, ""), ("src/foo.ts", 4, "bar"),
            ("/app/src/cart.js", 3, "Cart"), ("/app/src/cart.js", 10, "total")]),
    # The backtrace innermost last, then the panic's own location.
    (RUST, [("./src/lib.rs", 4, "fmt"), ("./src/main.rs", 4, "main"), ("./src/cart.rs", 10, "total"),
            ("/rustc/abc/library/std/src/panicking.rs", 645, "rust_begin_unwind"), ("src/cart.rs", 10, "")]),
    (CSHARP, [("C:/src/Shop/Program.cs", 9, "Main"), ("C:/src/Shop/Cart.cs", 42, "Total")]),
    (RUBY, [("bin/run.rb", 2, ""), ("app/models/cart.rb", 3, ""), ("app/models/cart.rb", 10, "total")]),
    # PHP names the line of a call: the frame is that line (the thrown-in line is seen last, once).
    (PHP, [("/app/src/Shop.php", 30, ""), ("/app/src/Cart.php", 12, "")]),
    ("thread 'main' panicked at 'boom', src/old.rs:3:9\n", [("src/old.rs", 3, "")]),  # Rust before 1.73
], ids=["go", "java", "node", "rust", "csharp", "ruby", "php", "rust-old"])
def test_stack_traces_of_every_language_give_frames_innermost_last(trace, frames):
    assert analyze_query("It crashes:\n" + trace).frames == frames


def test_a_python_traceback_reads_as_before_beside_another_language():
    q = analyze_query('Traceback (most recent call last):\n  File "/srv/billing/tax.py", line 7, in apply_tax\n'
                      "ValueError: negative amount\nand the front end says\n" + NODE)
    assert q.frames[-1] == ("/srv/billing/tax.py", 7, "apply_tax") and ("/app/src/cart.js", 10, "total") in q.frames


def test_a_huge_go_panic_keeps_the_innermost_frames_and_says_so():
    frames = "".join(f"main.f{i}(...)\n\t/src/app/f{i}.go:{i + 1} +0x1d\n" for i in range(1, 3001))  # f1 printed first: the innermost
    q = analyze_query("goroutine 1 [running]:\n" + frames)
    assert len(q.frames) == MAX_FRAMES and q.frames[-1] == ("/src/app/f1.go", 2, "f1")
    assert "innermost 100 of 3000 distinct traceback frames" in q.capped[0]


@pytest.mark.parametrize("line", [
    "\tat " + "a." * 3000 + "(" * 3000,  # Java: a name without a file
    "    at " + "f " * 10000 + "(" * 10000,  # Node: spaces and parentheses, never a location
    "\t" + "x" * 100_000 + ".go:12",  # Go: a path far over PATH_MAX
    "#1 " + "a(" * 25_000,  # PHP
    "x" + " in a.php" * 10_000,  # PHP's `in FILE on line N`
    "thread '" + "'" * 50_000,  # Rust
    "   at A.B(" + "x" * 50_000 + ") in C:\\x.cs:line",  # C#
    "f@" + "a:1" * 25_000,  # Firefox
])
def test_hostile_trace_lines_are_read_in_linear_time_and_give_no_frame(line):
    # A pattern that backtracks quadratically would take minutes on these 50-100 kB lines.
    q = analyze_query(line + "\n" + line)
    assert q.frames == []


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    repo = tmp_path_factory.mktemp("shop")
    write_repo(repo, {
        "shop/__init__.py": "",
        "shop/tax.py": '''
            RATE = 0.2


            def apply_tax(amount):
                if amount < 0:
                    raise ValueError("negative amount")
                return amount * (1 + RATE)


            def refund(amount):
                return -amount
        ''',
        "shop/cart.py": '''
            class Cart:
                def total(self):
                    return 0

                def clear(self):
                    return None
        ''',
    })
    index_repository(repo)
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        yield store


def test_a_frame_naming_only_a_line_finds_the_definition_around_it(shop):
    # A Node frame of an anonymous function names a file and a line, not a function.
    for line, expected in ((6, "func:shop/tax.py:apply_tax"), (11, "func:shop/tax.py:refund")):
        hits = search(shop, f"Error: boom\n    at /srv/app/shop/tax.py:{line}:9\n", limit=3,
                      signals=frozenset({"query_analysis"}))
        assert hits[0].entity.id == expected


def test_a_scoped_name_finds_its_method(shop):
    for query in ("Cart::total is wrong", "calling $cart->total() fails", "see Cart#total"):
        hits = search(shop, query, limit=3, signals=frozenset({"query_analysis"}))
        assert hits[0].entity.id == "method:shop/cart.py:Cart.total", query


@pytest.mark.parametrize("query, identifier", [
    ("Cart::total() panics", "Cart.total"), ("std::env::var is read", "std.env.var"),
    ("$cart->total() is null", "cart.total"), ("see Cart#total", "Cart.total"),
])
def test_scoped_names_are_identifiers(query, identifier):
    assert identifier in analyze_query(query).identifiers


@pytest.mark.parametrize("query, not_identifier", [
    ("pytest testing/test_x.py::TestCart::test_total fails", "TestCart.test_total"),  # a pytest node id
    ("see https://en.wikipedia.org/wiki/Empty_set#Extended_real_numbers", "Empty_set.Extended_real_numbers"),
    ("docs/core.html?highlight=symbols#symbols says", "symbols.symbols"), ("issue#fix", "issue.fix"),
    ("def f(x) -> int", "x.int"),
])
def test_node_ids_and_url_fragments_are_not_scoped_names(query, not_identifier):
    assert not_identifier not in analyze_query(query).identifiers


def test_paths_of_other_languages():
    q = analyze_query("see src/cart.go, web/App.tsx and lib/shop.rb; also src/vec.c, but not x.c, "
                      "self.m or engine.go() — and cart_test.go")
    assert q.paths == ["src/cart.go", "web/App.tsx", "lib/shop.rb", "src/vec.c", "cart_test.go"]


@pytest.mark.parametrize("ident, parts", [
    ("getHTTPResponse_v2", ["get", "http", "response", "v", "2"]), ("parse-http-request", ["parse", "http", "request"]),
    ("Cart::totalPrice", ["cart", "total", "price"]), ("cart->total_price", ["cart", "total", "price"]),
    ("shop.Cart.Total", ["shop", "cart", "total"]), ("XMLHttpRequest", ["xml", "http", "request"]),
])
def test_identifier_splitting_in_every_style(ident, parts):
    assert split_identifier(ident) == parts
    assert set(parts) <= set(index_terms(ident).split())


@pytest.mark.parametrize("path, is_test", [
    ("pkg/cart_test.go", True), ("pkg/testdata/cart.go", True), ("web/src/__tests__/cart.js", True),
    ("web/src/__mocks__/api.ts", True), ("web/cart.spec.ts", True), ("web/cart.test.mjs", True),
    ("src/test/java/com/acme/CartTest.java", True), ("app/src/androidTest/java/com/acme/CartTest.kt", True),
    ("src/main/java/com/acme/CartIT.java", True), ("tests/integration.rs", True), ("spec/models/cart_spec.rb", True),
    ("test/models/cart_test.rb", True), ("tests/CartTest.php", True), ("Shop.Tests/CartTests.cs", True),
    ("Tests/ShopTests/CartTests.swift", True), ("src/cart_unittest.cc", True), ("test/cart_test.exs", True),
    ("src/main/java/com/acme/Cart.java", False), ("src/cart.rs", False), ("lib/shop/spec.rb", False),
    ("pkg/contest.go", False), ("web/src/cart.ts", False), ("Shop/Cart.cs", False), ("lib/rspec/core.rb", False),
])
def test_test_files_of_every_language(path, is_test):
    from nsccn.reading.testpaths import is_test_path

    assert is_test_path(path) is is_test


def test_ranker_features_read_scoped_qualnames_per_language():
    from nsccn.ranking.features import _scoped_forms

    assert _scoped_forms("src/cart.rs", "Cart.total") == ["Cart::total"]
    assert _scoped_forms("lib/cart.rb", "Cart.total") == ["Cart::total", "Cart#total"]
    assert _scoped_forms("shop/cart.py", "Cart.total") == []  # Python: the dotted form only


def test_the_identifier_caches_stay_small_whatever_the_repository():
    """A parser lives as long as its pipeline and splits every identifier it meets: its caches
    are bounded (2**16 entries each) so its memory does not grow with the repository (with
    2**18, a 100k-file tree grew each parser from 41 to 140 MB)."""
    from nsccn import text

    for i in range(70_000):
        assert index_terms(f"distinctName{i}") == f"distinctname{i} distinct name {i}"
    assert text._split.cache_info().currsize <= 1 << 16
    assert text._terms.cache_info().currsize <= 1 << 16
