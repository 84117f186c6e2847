"""What `this` and `obj` can be (JS/TS), and names a project file gives (tsconfig `paths`):

- `this.m()` in an object literal's method is the literal's own `m` (`self+literal`, 0.9), not a
  guess at every `m` of the repository; an arrow function inside keeps the method's `this`, a
  `function` inside has its own;
- `obj.m()` on a receiver of unknown type guesses at members only (class methods, object literal
  methods, functions assigned to a property), never at a function a declaration names (`function
  f`, `const f = ...`, top level or inside a function);
- a guess from library code never lands in a test file (a test's guess at the library still does);
- tsconfig `paths` name files as an import does, extension and all: `"pkg": ["./src/index.ts"]`
  names that one file, `"pkg/*": ["./src/*.ts"]` every file under src/; a `tsconfig.base.json`
  (what a tsconfig.json `extends`) gives its paths too;
- Python: `with T() as x` binds x as `x = T()` does;
- a call on what a typed call returns (`p = req.copy()`, `copy() -> Prepared`), or on a field of a
  typed receiver (`r.request.copy()` with `request: Prepared` in Response's class body, `self.x =
  Other()` in its methods) reaches that type's method (`typed` 0.9), in Python and TS alike;
- JS/TS `super.m()` and `super(...)` go through the bases (`super+MRO`), as Python's `super().m()`.
"""

from __future__ import annotations

import pytest

from conftest import write_repo
from nsccn.indexing.indexer import index_repository
from nsccn.store import Store

FILES = {
    "tsconfig.json": '{"extends": "./tsconfig.base.json",'
                     ' "compilerOptions": {"paths": {"pkg": ["./src/index.ts"], "pkg/*": ["./src/*.ts"]}}}\n',
    "tsconfig.base.json": '{"compilerOptions": {"paths": {"@base/*": ["./src/*"]}}}\n',
    "src/index.ts": "export { createStore } from './vanilla.ts'\n",
    "src/vanilla.ts": """export const createStore = () => {
  const getState = () => 1
  return { getState }
}
export function helper() { return 2 }
""",
    "src/response.js": """module.exports = {
  set(field, val) { return val },
  get(field) { return field },
  append(field, val) {
    const prev = this.get(field)
    return this.set(field, prev + val)
  },
  later(field) {
    return [1].map(() => this.get(field))
  },
  detached(field) {
    return function () { return this.get(field) }
  },
}
""",
    "src/request.js": """module.exports = {
  get(field) { return field },
  header(field) { return this.get(field) },
}
""",
    "src/client.js": """exports.flush = function (store) { return store.getState() }
exports.call = function (x) { return x.helper() }
exports.remove = function (x) { return x.onClose() }
exports.write = function (x) { return x.emit() }
exports.emitter = { emit() { return 1 } }
""",
    "src/client.test.js": """const emitter = { onClose() { return 1 } }
it('closes', () => emitter.onClose())
it('emits', (x) => x.emit())
""",
    "src/user.ts": """import { createStore } from 'pkg'
import { helper } from 'pkg/vanilla'
import { helper as other } from '@base/vanilla'
export const store = createStore()
export const two = helper()
export const three = other()
""",
    "pkg/session.py": """class Session:
    def request(self, m):
        return m

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Other:
    def request(self, m):
        return m


def api(m):
    with Session() as session:
        return session.request(m)
""",
    "pkg/models.py": """from pkg.session import Other, Session


class Prepared:
    def copy(self) -> "Prepared":
        return Prepared()

    def prepare(self):
        return 1


class Response:
    request: Prepared
    connection: Session

    def __init__(self):
        self.backup = Other()


def redirect(r: Response):
    prep = r.request.copy()
    prep.prepare()
    r.connection.request(prep)
    return r.backup.request(prep)
""",
    "web/child.ts": """import { Store } from './ctx'
export class Cache extends Store {
  constructor() { super() }
  get(k: string) { return super.get(k) }
}
""",
    "web/ctx.ts": """export class Store {
  get(k: string) { return k }
}
export class Ctx {
  store: Store
  make(): Store { return this.store }
}
export function use(c: Ctx) {
  c.store.get('a')
  const s = c.make()
  return s.get('b')
}
""",
}


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    root = tmp_path_factory.mktemp("members")
    write_repo(root, FILES)
    index_repository(root, db_path=root / "index.db", workers=1)
    with Store(root / "index.db", readonly=True) as store:
        return [e for e in store.all_edges() if e.relation == "CALLS"]


def _from(calls, source):
    return {e.target: (e.resolution, e.confidence) for e in calls if e.source == source}


def test_this_in_an_object_literals_method_is_the_literal(calls):
    append = _from(calls, "func:src/response.js:append")
    assert append["func:src/response.js:set"] == ("self+literal", 0.9)
    assert append["func:src/response.js:get"] == ("self+literal", 0.9)
    assert "func:src/request.js:get" not in append  # the other literal's `get`
    assert _from(calls, "func:src/request.js:header") == {"func:src/request.js:get": ("self+literal", 0.9)}
    # an arrow function keeps the method's `this`; a `function` has its own
    assert _from(calls, "func:src/response.js:later")["func:src/response.js:get"] == ("self+literal", 0.9)
    detached = _from(calls, "func:src/response.js:detached")
    assert detached.get("func:src/response.js:get", ("", 0.0))[1] <= 0.5


def test_a_method_guess_reaches_members_only(calls):
    # `getState` is a local of createStore, `helper` a declared function: no object holds them by name
    assert "func:src/vanilla.ts:createStore.getState" not in _from(calls, "func:src/client.js:flush")
    assert "func:src/vanilla.ts:helper" not in _from(calls, "func:src/client.js:call")
    # an object literal's method is a member: still a guess, as a guess
    assert _from(calls, "func:src/client.js:write")["func:src/client.js:emit"][1] <= 0.5


def test_library_code_guesses_at_no_test(calls):
    assert "func:src/client.test.js:onClose" not in _from(calls, "func:src/client.js:remove")
    # a test's guess at the library stays a guess
    test_module = "module:src/client.test.js:src/client.test"
    assert _from(calls, test_module)["func:src/client.js:emit"][1] <= 0.5


def test_tsconfig_paths_name_files_with_their_extension(calls):
    user = _from(calls, "module:src/user.ts:src/user")
    assert user["func:src/vanilla.ts:createStore"] == ("import", 1.0)  # `pkg`: src/index.ts, re-exported
    assert user["func:src/vanilla.ts:helper"] == ("import", 1.0)  # `pkg/vanilla`: src/vanilla.ts
    lines = {e.line for e in calls if e.target == "func:src/vanilla.ts:helper"}
    assert lines == {5, 6}  # and `@base/vanilla`, through the paths of the file tsconfig.json extends


def test_with_binds_its_name_to_what_it_builds(calls):
    assert _from(calls, "func:pkg/session.py:api")["method:pkg/session.py:Session.request"] == ("typed", 0.9)
    assert "method:pkg/session.py:Other.request" not in _from(calls, "func:pkg/session.py:api")


def test_a_typed_calls_result_and_a_typed_receivers_field_are_typed(calls):
    redirect = _from(calls, "func:pkg/models.py:redirect")
    assert redirect["method:pkg/models.py:Prepared.copy"] == ("typed", 0.9)  # r.request.copy()
    assert redirect["method:pkg/models.py:Prepared.prepare"] == ("typed", 0.9)  # prep = ...copy(); prep.prepare()
    assert redirect["method:pkg/session.py:Session.request"] == ("typed", 0.9)  # r.connection.request()
    assert redirect["method:pkg/session.py:Other.request"] == ("typed", 0.9)  # r.backup.request()
    use = {(e.line, e.target): (e.resolution, e.confidence) for e in calls if e.source == "func:web/ctx.ts:use"}
    assert use[(9, "method:web/ctx.ts:Store.get")] == ("typed", 0.9)  # c.store.get()
    assert use[(11, "method:web/ctx.ts:Store.get")] == ("typed", 0.9)  # s = c.make(); s.get()


def test_super_goes_through_the_bases(calls):
    assert _from(calls, "method:web/child.ts:Cache.get") == {"method:web/ctx.ts:Store.get": ("super+MRO", 1.0)}
    assert _from(calls, "method:web/child.ts:Cache.constructor") == {"class:web/ctx.ts:Store": ("super+MRO", 1.0)}
