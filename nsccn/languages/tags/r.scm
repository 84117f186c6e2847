;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/r-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/r-lib/tree-sitter-r queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).

(binary_operator lhs: (identifier) @name operator: "<-" rhs: (function_definition)) @definition.function

(binary_operator lhs: (identifier) @name operator: "=" rhs: (function_definition)) @definition.function

(call function: (identifier) @name) @reference.call

(call function: (namespace_operator rhs: (identifier) @name)) @reference.call
