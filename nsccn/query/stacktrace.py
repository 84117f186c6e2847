"""Stack-trace frames of many languages, as (path, line, function), innermost last.

A bug report pastes a trace in its language's own shape: a Python traceback, a Go panic, a Java
or Kotlin stack trace with its `Caused by:` chain, a Node.js error, a Rust panic and backtrace,
a C#, Ruby or PHP trace. Query analysis (`nsccn.query.search`) wants them all alike: a file, a line and
a function (empty where the trace names none; the line then says which definition it was).

A query is untrusted input (a pasted 1 MB log). Every pattern is anchored at a line start and
each variable part either excludes the delimiter that ends it or is bounded in length, so a
line costs time linear in its length and the whole scan is linear in the query.
"""

from __future__ import annotations

import re

# Python: `File "x.py", line 12, in f`, anywhere in a line (innermost last, as Python prints).
PYTHON_FRAME = re.compile(r'File "([^"\n]+)", line (\d+), in ([\w<>]+)')

_P = r"[^\s()]{1,4096}"  # a path without spaces or parentheses (Node, Java, Rust, Ruby locations)
_L = r"(?P<{}>\d{{1,20}})"  # a line number, named per alternative (a longer one is kept as 0)
# One alternative per shape; all start at a line start. Traces other than Python's list the
# innermost frame first: `frames` reverses each block of consecutive frames.
_FRAME_LINE = re.compile(
    "^(?:" + "|".join((
        # Go: `\t/home/u/app/pkg/x.go:12 +0x1d`; its function is on the line before.
        rf"\t(?P<go>[^\s]{{1,4096}}\.go):{_L.format('goline')}(?: \+0x[0-9a-f]{{1,16}})?[ \t]*$",
        # Java, Kotlin, Scala, Groovy: `at com.foo.Bar$Inner.baz(Bar.java:42)` (`app//`, `java.base/` prefixes).
        rf"[ \t]*at (?P<jfn>[\w$.<>/]{{1,1024}})\((?P<jfile>[\w$.-]{{1,256}}\.(?:java|kt|kts|scala|groovy)):{_L.format('jline')}\)[ \t]*$",
        # C#: `at Shop.Cart.Total(Decimal x) in C:\src\Shop\Cart.cs:line 42`.
        rf"[ \t]*at (?P<csfn>[\w.`<>\[\],+]{{1,1024}})\([^()\n]{{0,1024}}\) in (?P<cs>[^\n]{{1,4096}}):line {_L.format('csline')}[ \t]*$",
        # Rust backtrace: `   3: crate::module::f` then `             at ./src/module.rs:10:5`.
        rf"[ \t]+at (?P<rs>{_P}\.rs):{_L.format('rsline')}:\d{{1,20}}[ \t]*$",
        # Node.js / V8: `at f (file.js:10:5)`, `at async Object.<anonymous> (/a/x.ts:3:1)`, `at new Foo (...)`.
        rf"[ \t]*at (?:async )?(?:new )?(?P<jsfn>[^\s()][^()\n]{{0,1024}}?) \((?P<js>[^()\s]{{1,4096}}):{_L.format('jsline')}:\d{{1,20}}\)[ \t]*$",
        # Node.js without a function: `at file.ts:3:1`, `at async file:///a/x.mjs:3:1`.
        rf"[ \t]*at (?:async )?(?P<jsbare>{_P}):{_L.format('jsbareline')}:\d{{1,20}}[ \t]*$",
        # Firefox / Safari: `f@http://host/app.js:10:5`, `@file.js:1:1`.
        rf"[ \t]*(?P<ffn>[\w$.<>/]{{0,1024}})@(?P<ff>[^\s@]{{1,4096}}):{_L.format('ffline')}:\d{{1,20}}[ \t]*$",
        # Rust panic: `thread 'main' panicked at src/x.rs:10:5:` (1.73+) or `... at 'msg', src/x.rs:10:5`.
        rf"thread '[^'\n]{{0,256}}' panicked at (?:'[^\n]{{0,4096}}', )?(?P<panic>{_P}\.rs):{_L.format('panicline')}:\d{{1,20}}:?[ \t]*$",
        # Ruby: `app/models/user.rb:10:in 'User#save'` (`from ` before it in a backtrace).
        rf"[ \t]*(?:from )?(?P<rb>[^\s:]{{1,4096}}\.rb):{_L.format('rbline')}:in [`'](?P<rbfn>[^'`\n]{{0,1024}})'",
        # PHP: `#0 /app/src/Cart.php(12): Cart->total()`: the line of a call, the function unnamed.
        rf"#\d{{1,9}} (?P<php>[^\s()]{{1,4096}}\.php)\({_L.format('phpline')}\): ",
        # PHP: `... in /app/src/Cart.php:12` / `in /app/src/Cart.php on line 12` (where it was thrown).
        rf"[^\n]{{0,4096}}? in (?P<phpin>[^\s()]{{1,4096}}\.php)(?::| on line ){_L.format('phpinline')}\b",
    )) + ")",
    re.MULTILINE,
)
# The last group of each alternative -> the alternative (Ruby's ends with its function).
_KIND = {f"{k}line": k for k in ("go", "j", "cs", "rs", "js", "jsbare", "ff", "panic", "php", "phpin")} | {"rbfn": "rb"}
_RUST_FN = re.compile(r"^[ \t]*\d{1,9}:[ \t]+([^\n]{1,1024}?)[ \t]*$")  # the line before a Rust `at` line
_BLOCK_BREAK = re.compile(r"^\s*(?:$|Caused by|Suppressed:|goroutine \d|Traceback|thread ')")


def _go_function(line: str) -> str:
    """`github.com/x/pkg.(*T).Method(0xc0, {0x1, 0x2})` -> `Method`; `main.f.func1(...)` -> `f`
    (a closure is part of the function it is written in); `created by main.main in goroutine 1` -> `main`."""
    s = line.strip()
    if s.startswith("created by "):
        s = s[len("created by "):].split(" in goroutine", 1)[0]
    elif s.endswith(")"):  # cut the argument list: the last `(` at depth zero
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    s = re.sub(r"\[[^\]]*\]", "", s.rsplit("/", 1)[-1])  # the package path, generic arguments
    parts = [p for p in s.split(".") if p and not p.startswith("(")]
    while len(parts) > 1 and re.fullmatch(r"(?:func|gowrap)\d+", parts[-1]):
        parts.pop()
    return parts[-1] if len(parts) > 1 else ""


def _rust_function(line: str) -> str:
    """`   3: mycrate::cart::Cart::total::h0123456789abcdef` -> `total`; closures belong to their function."""
    m = _RUST_FN.match(line)
    if not m:
        return ""
    parts = [p for p in re.split(r"::(?![^<]*>)", m.group(1)) if p]
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    while parts and parts[-1].startswith("{{"):
        parts.pop()
    name = parts[-1] if parts else ""
    return name if re.fullmatch(r"[A-Za-z_]\w*", name) else ""


def _java_frame(fn: str, file: str) -> tuple[str, str]:
    """`com.foo.Bar$Inner.baz`, `Bar.java` -> (`com/foo/Bar.java`, `baz`): the package is the folder."""
    fn = fn.rsplit("/", 1)[-1]  # `java.base/java.lang.Thread.run`, `app//com.foo.Bar.baz`
    cls, _, method = fn.rpartition(".")
    package = cls.rpartition(".")[0]
    if method in ("<init>", "<clinit>"):
        method = cls.rpartition(".")[2].split("$")[-1]  # a constructor is named as its class
    elif method.startswith("lambda$"):
        method = method.split("$")[1] if method.count("$") >= 2 else ""
    elif not re.fullmatch(r"[A-Za-z_$][\w$]*", method):
        method = ""
    return (package.replace(".", "/") + "/" + file if package else file), method


def _js_function(fn: str) -> str:
    """`Object.f` -> `f`, `Foo.bar [as baz]` -> `bar`, `Object.<anonymous>` -> ``."""
    fn = fn.split(" [as ", 1)[0].strip()
    last = fn.rsplit(".", 1)[-1]
    return last if re.fullmatch(r"[A-Za-z_$][\w$]*", last) else ""


def _js_path(path: str) -> str:
    """`file:///app/x.mjs` -> `/app/x.mjs`, `webpack:///./src/x.js` -> `./src/x.js`; `node:internal/...` and
    `<anonymous>` name no file of the repository -> ``."""
    for scheme in ("file://", "webpack://", "webpack-internal:///"):
        if path.startswith(scheme):
            return path[len(scheme):]
    if path.startswith(("node:", "<")) or path in ("native", "anonymous"):
        return ""
    if "://" in path:  # http://host/static/app.js: the path on the server
        return "/" + path.split("://", 1)[1].partition("/")[2]
    return path


def _ruby_function(fn: str) -> str:
    """`block (2 levels) in User#save` -> `save`, `User.find` -> `find`, `<main>` -> ``."""
    fn = fn.rsplit(" in ", 1)[-1]
    last = re.split(r"[#.]", fn)[-1]
    return last if re.fullmatch(r"[A-Za-z_]\w*[?!=]?", last) else ""


def _line(n: str) -> int:
    return int(n) if len(n) <= 9 else 0


def other_frames(query: str) -> list[tuple[str, int, str]]:
    """Frames of the non-Python traces of a query as (path, line, function), innermost last: each
    block of consecutive frames is turned around (these traces print the innermost first), and a
    Rust panic's location, the innermost of all, comes last."""
    out: list[tuple[str, int, str]] = []
    block: list[tuple[str, int, str]] = []
    panics: list[tuple[str, int, str]] = []
    prev_end = 0
    for m in _FRAME_LINE.finditer(query):
        if block:
            between = query[prev_end:m.start()].split("\n")[1:-1]  # the whole lines between two frames
            if len(between) > 4 or any(_BLOCK_BREAK.match(x) for x in between):
                out.extend(reversed(block))
                block = []
        prev_end = m.end()
        g = m.group
        kind = _KIND[m.lastgroup]  # which alternative matched: its last group says (`goline` -> `go`)
        line = _line(g(kind + "line"))
        if kind in ("go", "rs"):  # the function is on the line before
            before = query.rfind("\n", 0, m.start())
            previous = query[query.rfind("\n", 0, before) + 1:before] if before > 0 else ""
            fn = _go_function(previous) if kind == "go" else _rust_function(previous)
            block.append((g(kind), line, fn))
        elif kind == "j":
            path, fn = _java_frame(g("jfn"), g("jfile"))
            block.append((path, line, fn))
        elif kind == "cs":
            block.append((g("cs").replace("\\", "/"), line, g("csfn").rsplit(".", 1)[-1].split("`")[0]))
        elif kind in ("js", "jsbare", "ff"):
            path = _js_path(g(kind))
            if path:
                block.append((path, line, _js_function(g(kind + "fn")) if kind != "jsbare" else ""))
        elif kind == "panic":
            panics.append((g("panic"), line, ""))
        elif kind == "rb":
            block.append((g("rb"), line, _ruby_function(g("rbfn"))))
        else:  # PHP names the line of a call: the definition around that line is the frame
            block.append((g(kind), line, ""))
    out.extend(reversed(block))
    return out + panics

