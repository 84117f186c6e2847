; Calls (pkg.F, recv.M, F) and composite literals of named types (T{...}).
(call_expression function: [(identifier) (selector_expression)] @callee) @reference.call
(composite_literal type: [(type_identifier) (qualified_type)] @callee) @reference.class

; Struct embedding and interface embedding
(field_declaration_list (field_declaration !name type: [(type_identifier) (qualified_type)] @name) @reference.inherits)
(field_declaration_list (field_declaration !name type: (pointer_type [(type_identifier) (qualified_type)] @name)) @reference.inherits)
(interface_type (type_elem [(type_identifier) (qualified_type)] @name) @reference.inherits)
