;; Adapted from Aider (github.com/Aider-AI/aider, Apache-2.0), aider/queries/tree-sitter-language-pack/swift-tags.scm
;; at 5dc9490bb35f, itself adapted from github.com/alex-pinkus/tree-sitter-swift queries/tags.scm (MIT).
;; Captures renamed to the standard tags names (@name, @definition.*, @reference.*); patterns
;; for variables and properties left out (the long tail indexes definitions and calls).
;; Calls and inheritance added for NSCCN.

(class_declaration name: (type_identifier) @name) @definition.class

(protocol_declaration name: (type_identifier) @name) @definition.interface

(class_body [(function_declaration name: (simple_identifier) @name) (init_declaration "init" @name)] @definition.method)

(protocol_body (protocol_function_declaration name: (simple_identifier) @name) @definition.method)

(source_file (function_declaration name: (simple_identifier) @name) @definition.function)

(inheritance_specifier inherits_from: (user_type (type_identifier) @name)) @reference.implementation

(call_expression (simple_identifier) @name) @reference.call

(call_expression (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
