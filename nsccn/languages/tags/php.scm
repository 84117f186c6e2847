;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-languages/php-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/tree-sitter/tree-sitter-php queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; Methods are @definition.method here; interfaces, traits and inheritance added for NSCCN.

((comment)* @doc . (class_declaration name: (name) @name) @definition.class)

(interface_declaration name: (name) @name) @definition.interface

(trait_declaration name: (name) @name) @definition.interface

(namespace_definition name: (namespace_name) @name) @definition.module

((comment)* @doc . (function_definition name: (name) @name) @definition.function)

((comment)* @doc . (method_declaration name: (name) @name) @definition.method)

(base_clause (name) @name) @reference.implementation

(class_interface_clause (name) @name) @reference.implementation

(object_creation_expression [(qualified_name (name) @name) (name) @name]) @reference.class

(function_call_expression function: [(qualified_name (name) @name) (name) @name]) @reference.call

(scoped_call_expression name: (name) @name) @reference.call

(member_call_expression name: (name) @name) @reference.call
