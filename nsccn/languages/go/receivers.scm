; Receiver types: typed parameters and `var` declarations, `x := T{}` / `&T{}`, struct fields.
(parameter_declaration name: (identifier) @binding.name
  type: [(type_identifier) (qualified_type) (pointer_type) (generic_type)] @binding.type) @binding
(var_spec name: (identifier) @binding.name
  type: [(type_identifier) (qualified_type) (pointer_type) (generic_type)] @binding.type) @binding
(short_var_declaration left: (expression_list . (identifier) @binding.name .)
  right: (expression_list . [(composite_literal type: [(type_identifier) (qualified_type) (generic_type)] @binding.new)
                             (unary_expression operand: (composite_literal type: [(type_identifier) (qualified_type) (generic_type)] @binding.new))] .)) @binding
(field_declaration name: (field_identifier) @binding.name
  type: [(type_identifier) (qualified_type) (pointer_type) (generic_type)] @binding.type) @binding.field
; `c := NewCart()`, `c, err := NewCart()`: the type NewCart declares it returns
(short_var_declaration left: (expression_list . (identifier) @binding.name)
  right: (expression_list . (call_expression function: [(identifier) (selector_expression)] @binding.call) .)) @binding
