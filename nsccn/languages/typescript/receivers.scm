; Declared receiver types: typed locals, parameters (a parameter property is a field too) and
; class fields; `x: T = new U()` keeps the declared T.
(variable_declarator name: (identifier) @binding.name
  type: (type_annotation [(type_identifier) (nested_type_identifier) (generic_type)] @binding.type)) @binding
(required_parameter pattern: (identifier) @binding.name
  type: (type_annotation [(type_identifier) (nested_type_identifier) (generic_type)] @binding.type)) @binding
(optional_parameter pattern: (identifier) @binding.name
  type: (type_annotation [(type_identifier) (nested_type_identifier) (generic_type)] @binding.type)) @binding
(required_parameter (accessibility_modifier) pattern: (identifier) @binding.name
  type: (type_annotation [(type_identifier) (nested_type_identifier) (generic_type)] @binding.type)) @binding.field
(public_field_definition name: [(property_identifier) (private_property_identifier)] @binding.name
  type: (type_annotation [(type_identifier) (nested_type_identifier) (generic_type)] @binding.type)) @binding.field
(public_field_definition name: [(property_identifier) (private_property_identifier)] @binding.name
  value: (new_expression constructor: [(identifier) (member_expression)] @binding.new)) @binding.field
