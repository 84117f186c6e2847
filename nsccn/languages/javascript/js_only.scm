; field = () => {} in a class body
(field_definition
  property: (property_identifier) @name
  value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.method

; extends (TypeScript wraps it in an extends_clause)
(class_heritage . [(identifier) (member_expression)] @name) @reference.inherits

; a class field bound to a constructor (receiver types)
(field_definition property: [(property_identifier) (private_property_identifier)] @binding.name
  value: (new_expression constructor: [(identifier) (member_expression)] @binding.new)) @binding.field
