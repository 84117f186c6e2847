; Functions, methods (attached to their receiver's type), types: struct, interface, others.
(function_declaration name: (identifier) @name body: (_) @body) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration name: (identifier)? @receiver.name
                                                   type: [(type_identifier) @receiver
                                                          (pointer_type (type_identifier) @receiver)
                                                          (generic_type type: (type_identifier) @receiver)
                                                          (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name
  body: (_) @body) @definition.method
(type_declaration (type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct)
(type_declaration (type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface)
(type_declaration (type_spec name: (type_identifier) @name type: [(type_identifier) (qualified_type) (function_type) (map_type) (slice_type) (array_type) (channel_type) (pointer_type) (generic_type)]) @definition.type)
(method_elem name: (field_identifier) @name) @definition.method
