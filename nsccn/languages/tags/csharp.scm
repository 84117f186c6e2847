;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/csharp-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/tree-sitter/tree-sitter-c-sharp queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).

((comment)* @doc . (class_declaration name: (identifier) @name) @definition.class)

(struct_declaration name: (identifier) @name) @definition.class

(record_declaration name: (identifier) @name) @definition.class

(enum_declaration name: (identifier) @name) @definition.type

(class_declaration (base_list (_) @name)) @reference.implementation

(interface_declaration name: (identifier) @name) @definition.interface

(interface_declaration (base_list (_) @name)) @reference.implementation

((comment)* @doc . (method_declaration name: (identifier) @name) @definition.method)

(constructor_declaration name: (identifier) @name) @definition.method

(object_creation_expression type: (identifier) @name) @reference.class

(variable_declaration type: (identifier) @name) @reference.type

(invocation_expression function: (member_access_expression name: (identifier) @name)) @reference.call

(invocation_expression function: (identifier) @name) @reference.call

(namespace_declaration name: (identifier) @name) @definition.module

(namespace_declaration name: (qualified_name) @name) @definition.module
