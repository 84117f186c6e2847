;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/cpp-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/tree-sitter/tree-sitter-cpp queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; Calls, namespaces and the doc comment added for NSCCN.

(struct_specifier name: (type_identifier) @name body: (_)) @definition.class

(class_specifier name: (type_identifier) @name) @definition.class

(declaration type: (union_specifier name: (type_identifier) @name)) @definition.class

(namespace_definition name: (namespace_identifier) @name) @definition.module

((comment)* @doc . (function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function)

(function_definition declarator: (function_declarator declarator: (field_identifier) @name)) @definition.method

;; `int Cart::total() {...}` written outside the class: a method of Cart (@receiver, as a Go method)
(function_definition declarator: (function_declarator declarator: (qualified_identifier scope: (namespace_identifier) @receiver name: (identifier) @name))) @definition.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier scope: (template_type) name: (identifier) @name))) @definition.method
(function_definition type: (_) declarator: (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier scope: (namespace_identifier) @receiver name: (identifier) @name)))) @definition.method

(field_declaration declarator: (function_declarator declarator: (field_identifier) @name)) @definition.method

(type_definition declarator: (type_identifier) @name) @definition.type

(enum_specifier name: (type_identifier) @name) @definition.type

(preproc_function_def name: (identifier) @name) @definition.macro

(call_expression function: (identifier) @name) @reference.call

(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call

(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call

(base_class_clause (type_identifier) @name) @reference.implementation
