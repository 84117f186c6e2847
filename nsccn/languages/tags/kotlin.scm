;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-languages/kotlin-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/fwcd/tree-sitter-kotlin queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; Objects are classes here; a function inside a class body is a method.

(class_declaration (type_identifier) @name) @definition.class

(object_declaration (type_identifier) @name) @definition.class

(class_body (function_declaration (simple_identifier) @name) @definition.method)

(source_file (function_declaration (simple_identifier) @name) @definition.function)

(call_expression [(simple_identifier) @name (navigation_expression (navigation_suffix (simple_identifier) @name))]) @reference.call

(delegation_specifier [(user_type (type_identifier) @name) (constructor_invocation (user_type (type_identifier) @name))]) @reference.implementation
