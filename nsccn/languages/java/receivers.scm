; Receiver types: typed parameters, locals and fields; `var x = new T()`.
(formal_parameter type: [(type_identifier) (scoped_type_identifier) (generic_type)] @binding.type
  name: (identifier) @binding.name) @binding
(local_variable_declaration type: [(type_identifier) (scoped_type_identifier) (generic_type)] @binding.type
  declarator: (variable_declarator name: (identifier) @binding.name)) @binding
(local_variable_declaration
  declarator: (variable_declarator name: (identifier) @binding.name
                value: (object_creation_expression type: [(type_identifier) (scoped_type_identifier) (generic_type)] @binding.new))) @binding
(field_declaration type: [(type_identifier) (scoped_type_identifier) (generic_type)] @binding.type
  declarator: (variable_declarator name: (identifier) @binding.name)) @binding.field
