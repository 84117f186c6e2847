;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/c-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/tree-sitter/tree-sitter-c queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; Calls and the doc comment added for NSCCN.

(struct_specifier name: (type_identifier) @name body: (_)) @definition.class

(declaration type: (union_specifier name: (type_identifier) @name)) @definition.class

((comment)* @doc . (function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function)

((comment)* @doc . (function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function)

(declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.function

(type_definition declarator: (type_identifier) @name) @definition.type

(enum_specifier name: (type_identifier) @name) @definition.type

(preproc_function_def name: (identifier) @name) @definition.macro

(call_expression function: (identifier) @name) @reference.call

(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
