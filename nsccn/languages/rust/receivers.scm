; Receiver types: typed parameters and `let`s, `let x = T::new()` / `T::default()` / `T { .. }`,
; struct fields.
(parameter pattern: (identifier) @binding.name
  type: [(type_identifier) (scoped_type_identifier) (reference_type) (generic_type)] @binding.type) @binding
(let_declaration pattern: (identifier) @binding.name
  type: [(type_identifier) (scoped_type_identifier) (reference_type) (generic_type)] @binding.type) @binding
(let_declaration pattern: (identifier) @binding.name
  value: (call_expression function: (scoped_identifier path: [(identifier) (scoped_identifier)] @binding.new
                                                       name: (identifier) @_ctor)
  (#match? @_ctor "^(new|default)$"))) @binding
(let_declaration pattern: (identifier) @binding.name
  value: (struct_expression name: [(type_identifier) (scoped_type_identifier)] @binding.new)) @binding
(field_declaration name: (field_identifier) @binding.name
  type: [(type_identifier) (scoped_type_identifier) (reference_type) (generic_type)] @binding.type) @binding.field
; `let c = make()`, `let c = Cart::open()`: the type the function declares it returns
(let_declaration pattern: (identifier) @binding.name
  value: (call_expression function: (identifier) @binding.call)) @binding
(let_declaration pattern: (identifier) @binding.name
  value: (call_expression function: (scoped_identifier name: (identifier) @_fn) @binding.call
  (#not-match? @_fn "^(new|default)$"))) @binding
