;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/elixir-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/elixir-lang/tree-sitter-elixir queries/tags.scm (Apache-2.0).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; The definition keywords (def, defmodule, ...) are not references to calls.

(call target: (identifier) @_kw (arguments (alias) @name) (#any-of? @_kw "defmodule" "defprotocol")) @definition.module

(call
  target: (identifier) @_kw
  (arguments [
    (identifier) @name
    (call target: (identifier) @name)
    (binary_operator left: (call target: (identifier) @name) operator: "when")
  ])
  (#any-of? @_kw "def" "defp" "defdelegate" "defguard" "defguardp" "defn" "defnp")) @definition.function

(call target: (identifier) @_kw (arguments [(identifier) @name (call target: (identifier) @name)]) (#any-of? @_kw "defmacro" "defmacrop")) @definition.macro

(call
  target: [(identifier) @name (dot right: (identifier) @name)]
  (#not-match? @name "^(def|defp|defdelegate|defguard|defguardp|defmacro|defmacrop|defn|defnp|defmodule|defprotocol|defimpl|defstruct|defexception|defoverridable|alias|case|cond|else|for|if|import|quote|raise|receive|require|reraise|super|throw|try|unless|unquote|unquote_splicing|use|with)$")) @reference.call

(binary_operator operator: "|>" right: (identifier) @name) @reference.call
