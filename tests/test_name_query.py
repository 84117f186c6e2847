"""Find what I name, take what I type (issue 41): a query that is a name puts its definition first,
in three languages; any unambiguous name is an id; paths as typed from a subdirectory; the index
directory stays out of `git status`."""

import shutil
import subprocess
import sys

import pytest

from conftest import write_repo
from nsccn.indexing.indexer import index_repository
from nsccn.serving.navigator import Navigator, NavigatorError

REPO = {
    # Python: a class, a look-alike, a test named after it, a re-export, a method defined twice
    "web/__init__.py": "from .api import get\nfrom .models import Response\n",
    "web/api.py": '''
        from .sessions import Session

        def get(url):
            """Send a GET request."""
            return Session().send(url)
    ''',
    "web/models.py": '''
        class Response:
            """An HTTP response."""

            def __init__(self, status):
                self.status = status

        class MockResponse(Response):
            """A response made up for tests: the Response word, many times over."""

            def response_status(self):
                return self.status
    ''',
    "web/sessions.py": '''
        class Session:
            def send(self, request):
                """Send a request, following redirects."""
                return self.redirect(request)

            def redirect(self, request):
                return request

        class SessionRedirectMixin:
            def send(self, request):
                return request
    ''',
    "tests/test_web.py": '''
        from web.models import Response

        def test_basic_response():
            response = Response(200)
            assert response.status == 200

        class RedirectSession:
            def send(self, request):
                return request
    ''',
    # Go: a method whose name other types also define, and a struct of that name
    "gin/context.go": '''
        package gin

        type Context struct{}

        func (c *Context) JSON(code int, obj any) {
            c.Render(code, obj)
        }

        func (c *Context) Render(code int, obj any) {}
    ''',
    "gin/errors.go": '''
        package gin

        type Error struct{}

        func (msg *Error) JSON() any { return nil }
    ''',
    # JavaScript: a function assigned to an object, and a test file named after it
    "lib/response.js": '''
        var res = Object.create(null);
        module.exports = res;

        res.send = function send(body) {
          return this.end(body);
        };

        res.json = function json(obj) {
          return this.send(JSON.stringify(obj));
        };
    ''',
    "test/res.send.js": '''
        describe('res.send', function () {
          it('should send a body', function () { send('x'); });
        });
    ''',
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = write_repo(tmp_path_factory.mktemp("names") / "repo", REPO)
    index_repository(root, workers=1)
    return root


@pytest.fixture(scope="module")
def nav(repo):
    n = Navigator(repo)
    yield n
    n.close()


@pytest.mark.parametrize("query, first", [
    ("Response", "class:web/models.py:Response"),
    ("Session.send", "method:web/sessions.py:Session.send"),
    ("web.sessions.Session.send", "method:web/sessions.py:Session.send"),
    ("Session::send", "method:web/sessions.py:Session.send"),
    ("Session#send", "method:web/sessions.py:Session.send"),
    ("web.get", "func:web/api.py:get"),  # re-exported by web/__init__.py
    ("`get()`", "func:web/api.py:get"),
    ("Context.JSON", "method:gin/context.go:Context.JSON"),
    ("gin.Context.JSON", "method:gin/context.go:Context.JSON"),
    ("res.send", "func:lib/response.js:send"),  # assigned to `res`, not the test file named so
    ("Session.send redirects", "method:web/sessions.py:Session.send"),  # a name in a phrase
])
def test_a_name_puts_its_definition_first(nav, query, first):
    results = nav.search(query, limit=5).results
    assert results[0].id == first, [r.id for r in results]
    assert results[0].matched_by.get("name") == 1


def test_several_definitions_library_first_then_the_rest_as_ranked(nav):
    ids = [r.id for r in nav.search("send", limit=10).results]
    library = {"method:web/sessions.py:Session.send", "method:web/sessions.py:SessionRedirectMixin.send",
               "func:lib/response.js:send"}
    assert set(ids[:3]) == library
    assert ids.index("method:tests/test_web.py:RedirectSession.send") > 2
    # kinds and paging still hold
    assert all(r.kind == "class" for r in nav.search("Response", kinds=["class"]).results)
    assert nav.search("send", limit=1, offset=1).results[0].id == ids[1]


def test_find_symbol_reads_names_the_same_way(nav):
    assert nav.find_symbol("res.send").definitions[0].id == "func:lib/response.js:send"
    assert [d.id for d in nav.find_symbol("web.get").definitions] == ["func:web/api.py:get"]


@pytest.mark.parametrize("typed", [
    "method:web/sessions.py:Session.send", "Session.send", "web.sessions.Session.send", "sessions.Session.send",
    "web/sessions.py:Session.send", "sessions.py:Session.send", "Session::send",
])
def test_any_unambiguous_name_is_an_id(nav, typed):
    assert nav.window(typed, context_lines=0).entity_id == "method:web/sessions.py:Session.send"


def test_an_ambiguous_name_lists_its_definitions_and_a_prefix_is_completed(nav):
    with pytest.raises(NavigatorError, match="'send' names 5 definitions") as exc:
        nav.trace("send")
    assert exc.value.suggestions[3:] == ["method:tests/test_web.py:RedirectSession.send",  # tests last,
                                         "module:test/res.send.js:test/res.send"]  # a file named so after them
    with pytest.raises(NavigatorError, match="unknown entity id") as exc:
        nav.find_references("Session.sen")
    assert exc.value.suggestions[0] == "method:web/sessions.py:Session.send"


def nsccn(*args, cwd):
    return subprocess.run([sys.executable, "-m", "nsccn.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_paths_as_typed_from_a_subdirectory(repo):
    here = repo / "web"
    for typed in ("../gin/context.go", str(repo / "gin" / "context.go")):
        r = nsccn("skeleton", typed, cwd=here)
        assert r.returncode == 0 and "func (c *Context) JSON" in r.stdout, (typed, r.stderr)
    r = nsccn("skeleton", "../../outside.py", cwd=here)
    assert r.returncode == 1 and "outside the repository" in r.stderr
    r = nsccn("window", "Session.send", cwd=here)  # a name for an id, on the command line too
    assert r.returncode == 0 and "def send(self, request):" in r.stdout
    r = nsccn("search", "send", "--limit", "1", cwd=here)
    assert "--offset 1" in r.stdout and "offset=" not in r.stdout
    r = nsccn("search", "send", "--root", str(repo / "no-such-dir"), cwd=here)
    assert r.returncode == 2 and "no such directory" in r.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_pipeline_into_a_pipe_prints_plain_lines_and_git_status_stays_clean(tmp_path):
    root = write_repo(tmp_path / "g", {f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(5)})
    git = lambda *a: subprocess.run(["git", "-C", str(root), *a], capture_output=True, text=True, check=True)  # noqa: E731
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    r = nsccn("index", "--pipeline", "--workers", "1", "--no-embed", cwd=root)  # stderr is a pipe here
    assert r.returncode == 0, r.stderr
    assert "nsccn: indexing 5/5 file" in r.stderr and "\r" not in r.stderr and "it/s" not in r.stderr
    assert (root / ".nsccn" / "index.db").exists()
    assert git("status", "--porcelain").stdout == ""  # `.nsccn/` ignores itself
