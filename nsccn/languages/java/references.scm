; Calls: obj.m(), m(), Type.m(); constructions: new T()
(method_invocation object: [(identifier) (field_access) (this)] @callee.object name: (identifier) @name) @reference.call
(method_invocation !object name: (identifier) @name) @reference.call
(object_creation_expression type: [(type_identifier) (scoped_type_identifier)] @name) @reference.class
(object_creation_expression type: (generic_type [(type_identifier) (scoped_type_identifier)] @name)) @reference.class

; extends / implements
(superclass [(type_identifier) (scoped_type_identifier)] @name) @reference.inherits
(superclass (generic_type [(type_identifier) (scoped_type_identifier)] @name)) @reference.inherits
(super_interfaces (type_list [(type_identifier) (scoped_type_identifier)] @name)) @reference.implementation
(super_interfaces (type_list (generic_type [(type_identifier) (scoped_type_identifier)] @name))) @reference.implementation
(extends_interfaces (type_list [(type_identifier) (scoped_type_identifier)] @name)) @reference.inherits
(extends_interfaces (type_list (generic_type [(type_identifier) (scoped_type_identifier)] @name))) @reference.inherits
