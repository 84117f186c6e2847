;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/solidity-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/JoranHonig/tree-sitter-solidity queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).

(contract_declaration (_ (function_definition name: (identifier) @name) @definition.method))

(source_file (function_definition name: (identifier) @name) @definition.function)

(contract_declaration name: (identifier) @name) @definition.class

(interface_declaration name: (identifier) @name) @definition.interface

(library_declaration name: (identifier) @name) @definition.module

(struct_declaration name: (identifier) @name) @definition.class

(enum_declaration name: (identifier) @name) @definition.type

(call_expression function: (expression (identifier) @name)) @reference.call

(call_expression function: (expression (member_expression property: (_) @name))) @reference.call

(inheritance_specifier ancestor: (user_defined_type (_) @name .)) @reference.implementation
