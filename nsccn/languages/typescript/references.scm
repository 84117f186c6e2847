; extends / implements (classes), extends (interfaces)
(extends_clause value: [(identifier) (member_expression)] @name) @reference.inherits
(implements_clause [(type_identifier) (nested_type_identifier)] @name) @reference.implementation
(implements_clause (generic_type name: (_) @name)) @reference.implementation
(extends_type_clause type: [(type_identifier) (nested_type_identifier)] @name) @reference.inherits
(extends_type_clause type: (generic_type name: (_) @name)) @reference.inherits
