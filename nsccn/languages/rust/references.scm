; Calls: f(), self.m(), a::b::f(), Type::new(), x.m()
(call_expression function: [(identifier) (field_expression) (scoped_identifier)] @callee) @reference.call
(call_expression function: (generic_function function: [(identifier) (field_expression) (scoped_identifier)] @callee)) @reference.call
(struct_expression name: [(type_identifier) (scoped_type_identifier)] @callee) @reference.class

; trait Sub: Super
(trait_item bounds: (trait_bounds [(type_identifier) (scoped_type_identifier)] @name)) @reference.inherits
(trait_item bounds: (trait_bounds (generic_type type: [(type_identifier) (scoped_type_identifier)] @name))) @reference.inherits
