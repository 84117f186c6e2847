;; Written for NSCCN (MIT) against the julia grammar of tree-sitter-language-pack 0.9.0, in the
;; standard tags capture names (@name, @definition.*, @reference.*, @doc).

((string_literal)? @doc . (function_definition (signature (call_expression . (identifier) @name))) @definition.function)

(assignment . (call_expression . (identifier) @name)) @definition.function

(macro_definition (signature (call_expression . (identifier) @name))) @definition.macro

(module_definition name: (identifier) @name) @definition.module

(struct_definition (type_head (identifier) @name)) @definition.class

(abstract_definition (type_head (identifier) @name)) @definition.type

(call_expression . (identifier) @name) @reference.call
