; Receiver types (nsccn/languages/receivers.py): `const c = new Cart()`, `this.c = new Cart()`.
(variable_declarator name: (identifier) @binding.name
  value: (new_expression constructor: [(identifier) (member_expression)] @binding.new)) @binding
(assignment_expression
  left: (member_expression object: (this) property: [(property_identifier) (private_property_identifier)] @binding.name)
  right: (new_expression constructor: [(identifier) (member_expression)] @binding.new)) @binding.field
; `const c = make()`: the type make declares it returns (the resolver reads its signature)
(variable_declarator name: (identifier) @binding.name
  value: (call_expression function: [(identifier) (member_expression)] @binding.call)) @binding
