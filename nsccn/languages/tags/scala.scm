;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-languages/scala-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/tree-sitter/tree-sitter-scala queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; Objects are classes, enums types; a function inside a template body is a method.

(package_clause name: (package_identifier) @name) @definition.module

(trait_definition name: (identifier) @name) @definition.interface

(enum_definition name: (identifier) @name) @definition.type

(class_definition name: (identifier) @name) @definition.class

(object_definition name: (identifier) @name) @definition.class

(template_body (function_definition name: (identifier) @name) @definition.method)

(compilation_unit (function_definition name: (identifier) @name) @definition.function)

(type_definition name: (type_identifier) @name) @definition.type

(call_expression function: (identifier) @name) @reference.call

(call_expression function: (field_expression field: (identifier) @name)) @reference.call

(instance_expression (type_identifier) @name) @reference.class

(extends_clause (type_identifier) @name) @reference.implementation
