; field = () => {} in a class body
(field_definition
  property: (property_identifier) @name
  value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.method

; extends (TypeScript wraps it in an extends_clause)
(class_heritage . [(identifier) (member_expression)] @name) @reference.inherits
