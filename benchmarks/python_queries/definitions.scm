; Definitions: classes, and functions (methods when directly inside a class). A decorator belongs
; to its definition through the language's wrapper_types (decorated_definition).
(class_definition name: (identifier) @name body: (block) @body) @definition.class
(function_definition name: (identifier) @name body: (block) @body) @definition.function
