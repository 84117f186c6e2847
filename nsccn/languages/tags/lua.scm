;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/lua-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/tree-sitter-grammars/tree-sitter-lua queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).

(function_declaration name: [(identifier) @name (dot_index_expression field: (identifier) @name)]) @definition.function

(function_declaration name: (method_index_expression method: (identifier) @name)) @definition.method

(assignment_statement
  (variable_list . name: [(identifier) @name (dot_index_expression field: (identifier) @name)])
  (expression_list . value: (function_definition))) @definition.function

(function_call name: [(identifier) @name (dot_index_expression field: (identifier) @name) (method_index_expression method: (identifier) @name)]) @reference.call
