;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/elm-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/elm-tooling/tree-sitter-elm queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).

(value_declaration (function_declaration_left (lower_case_identifier) @name)) @definition.function

(type_declaration (upper_case_identifier) @name) @definition.type

(type_alias_declaration name: (upper_case_identifier) @name) @definition.type

(module_declaration (upper_case_qid) @name) @definition.module

(function_call_expr target: (value_expr (value_qid (lower_case_identifier) @name))) @reference.call

(type_ref (upper_case_qid (upper_case_identifier) @name)) @reference.type
