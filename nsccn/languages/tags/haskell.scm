;; Written for NSCCN (MIT) against the haskell grammar of tree-sitter-language-pack 0.9.0, in the
;; standard tags capture names (@name, @definition.*, @reference.*, @doc).

(class_declarations (signature name: (variable) @name) @definition.method)

(declarations (function name: (variable) @name) @definition.function)

(declarations (bind name: (variable) @name) @definition.function)

(data_type name: (name) @name) @definition.class

(newtype name: (name) @name) @definition.class

(type_synomym name: (name) @name) @definition.type

(class name: (name) @name) @definition.interface

(instance name: (name) @name) @reference.implementation

(apply function: (variable) @name) @reference.call

(apply function: (qualified (variable) @name)) @reference.call
