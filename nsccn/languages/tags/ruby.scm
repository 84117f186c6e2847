;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-languages/ruby-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/tree-sitter/tree-sitter-ruby queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; Left out: the pattern that took every identifier for a call (a variable is no call).

((comment)* @doc . [(method name: (_) @name) (singleton_method name: (_) @name)] @definition.method)

(alias name: (_) @name) @definition.method

((comment)* @doc . [
  (class name: [(constant) @name (scope_resolution name: (_) @name)])
  (singleton_class value: [(constant) @name (scope_resolution name: (_) @name)])
] @definition.class)

(module name: [(constant) @name (scope_resolution name: (_) @name)]) @definition.module

(class superclass: (superclass [(constant) @name (scope_resolution name: (_) @name)])) @reference.implementation

(call method: (identifier) @name) @reference.call
