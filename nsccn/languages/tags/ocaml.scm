;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/ocaml-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/tree-sitter/tree-sitter-ocaml queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; Left out: operators as calls.

((comment)? @doc . (module_definition (module_binding (module_name) @name) @definition.module))

(module_path (module_name) @name) @reference.module

((comment)? @doc . (module_type_definition (module_type_name) @name) @definition.interface)

((comment)? @doc . (value_definition [
  (let_binding pattern: (value_name) @name (parameter))
  (let_binding pattern: (value_name) @name body: [(fun_expression) (function_expression)])
] @definition.function))

((comment)? @doc . (external (value_name) @name) @definition.function)

((comment)? @doc . (type_definition (type_binding name: (type_constructor) @name) @definition.type))

(application_expression function: (value_path (value_name) @name)) @reference.call

((comment)? @doc . [
  (class_definition (class_binding (class_name) @name) @definition.class)
  (class_type_definition (class_type_binding (class_type_name) @name) @definition.class)
])

((comment)? @doc . (method_definition (method_name) @name) @definition.method)

(method_invocation (method_name) @name) @reference.call
