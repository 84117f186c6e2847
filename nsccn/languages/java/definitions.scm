; Classes (nested ones too), interfaces, enums, records, annotation types; methods and constructors.
(class_declaration name: (identifier) @name body: (_) @body) @definition.class
(interface_declaration name: (identifier) @name body: (_) @body) @definition.interface
(enum_declaration name: (identifier) @name body: (_) @body) @definition.enum
(record_declaration name: (identifier) @name body: (_) @body) @definition.record
(annotation_type_declaration name: (identifier) @name body: (_) @body) @definition.interface
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name body: (_) @body) @definition.method
(compact_constructor_declaration name: (identifier) @name body: (_) @body) @definition.method
