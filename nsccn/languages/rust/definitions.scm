; Functions, methods (in impl blocks and traits), structs, enums, unions, traits, type aliases,
; inline modules; impl blocks attach their functions to the type (and the trait is its base).
(function_item name: (identifier) @name body: (_) @body) @definition.function
(function_signature_item name: (identifier) @name) @definition.method
(struct_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(union_item name: (type_identifier) @name) @definition.union
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name body: (declaration_list)) @definition.module
(macro_definition name: (identifier) @name) @definition.macro

(impl_item
  trait: [(type_identifier) (scoped_type_identifier) (generic_type)]? @scope.trait
  type: [(type_identifier) @scope.type
         (generic_type type: (type_identifier) @scope.type)
         (scoped_type_identifier name: (type_identifier) @scope.type)
         (reference_type type: (type_identifier) @scope.type)]) @scope.impl
