"""Edges an agent can trust (JS/TS): the guesses that are almost never right give no edge, and the
calls they stood for reach the right definition where the source says which.

- a bare name that no import and no definition of the file binds (a parameter, a local, a
  global) is no guess at another file's function of that name;
- `obj.m()` on a receiver of unknown type, with m a method of the standard library's own types
  (`res.json()`, `headers.set()`, `arr.map()`), is no guess at ours; a typed receiver still is;
- `this.use = (...) => {}` in a constructor makes `use` a member: `app.use()` on a constructed
  `app` is `typed`, and so is `new App().use()`;
- a definition inside an anonymous callback is seen only there: the file's other calls of its
  name reach the import, and a second local of the name in another callback gets its own calls.
"""

from __future__ import annotations

import pytest

from conftest import write_repo
from nsccn.indexing.indexer import index_repository
from nsccn.store import Store

FILES = {
    "src/handlers.ts": "export function handler() { return 1 }\n",
    "src/context.ts": """export class Context {
  json(o: object) { return o }
  render(s: string) { return s }
}
""",
    "src/app.ts": """import { Context } from './context'
export function run(handler: () => number) { return handler() }
export function reply(res) { return res.json() }
export function paint(x) { return x.render('a') }
export function typed() { const c = new Context(); return c.json({}) }
export class App {
  constructor() {
    this.use = (path: string) => path
  }
  mount() { return this.use('/') }
}
export function serve() { const app = new App(); return app.use('/x') }
export function chained() { return new App().use('/y') }
export const proto = {
  set(k, v) { return v },
  assign(k, v) { return this.set(k, v) },
}
""",
    "src/store.ts": "export const createStore = () => ({})\n",
    "src/store.test.ts": """import { createStore } from './store'
describe('one', () => {
  const createStore = () => 1
  it('a', () => createStore())
})
describe('two', () => {
  const createStore = () => 2
  it('b', () => createStore())
})
describe('three', () => {
  it('c', () => createStore())
})
""",
}


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    root = tmp_path_factory.mktemp("trusted")
    write_repo(root, FILES)
    index_repository(root, db_path=root / "index.db", workers=1)
    with Store(root / "index.db", readonly=True) as store:
        return [e for e in store.all_edges() if e.relation == "CALLS"]


def _from(calls, source):
    return {e.target: e for e in calls if e.source == source}


def test_a_bare_name_no_import_binds_is_no_guess(calls):
    # `handler` is run's parameter: the other file's function of that name is not called
    assert "func:src/handlers.ts:handler" not in _from(calls, "func:src/app.ts:run")


def test_a_standard_library_method_name_is_no_guess_on_an_unknown_receiver(calls):
    assert "method:src/context.ts:Context.json" not in _from(calls, "func:src/app.ts:reply")
    # `this` outside a class is no receiver of unknown type: an object literal's own `set`
    assert "func:src/app.ts:set" in _from(calls, "func:src/app.ts:assign")
    # a name the standard library's types do not define is still guessed, as a guess
    paint = _from(calls, "func:src/app.ts:paint")
    assert paint["method:src/context.ts:Context.render"].confidence <= 0.5
    # a receiver whose type the source states reaches the method whatever its name
    typed = _from(calls, "func:src/app.ts:typed")["method:src/context.ts:Context.json"]
    assert (typed.resolution, typed.confidence) == ("typed", 0.9)


def test_a_function_assigned_to_this_is_a_member(calls):
    use = "func:src/app.ts:App.constructor.use"
    served = _from(calls, "func:src/app.ts:serve")[use]
    assert (served.resolution, served.confidence) == ("typed", 0.9)
    chained = _from(calls, "func:src/app.ts:chained")[use]  # `new App().use()`: on what was just built
    assert (chained.resolution, chained.confidence) == ("typed", 0.9)
    mounted = _from(calls, "method:src/app.ts:App.mount")[use]
    assert (mounted.resolution, mounted.confidence) == ("self+MRO", 1.0)


def test_a_callbacks_own_definition_is_seen_only_in_that_callback(calls):
    module = {(e.line, e.target): e for e in calls if e.source == "module:src/store.test.ts:src/store.test"}
    assert (4, "func:src/store.test.ts:createStore") in module
    assert (8, "func:src/store.test.ts:createStore#2") in module
    assert module[(11, "func:src/store.ts:createStore")].resolution == "import"
    # and nothing else: no call goes to a local it cannot see
    assert sorted(module) == [(4, "func:src/store.test.ts:createStore"), (8, "func:src/store.test.ts:createStore#2"),
                              (11, "func:src/store.ts:createStore")]
