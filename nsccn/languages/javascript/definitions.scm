; Definitions: functions, classes, methods, functions bound to names.
(function_declaration name: (identifier) @name body: (_) @body) @definition.function
(generator_function_declaration name: (identifier) @name body: (_) @body) @definition.function
(class_declaration name: (_) @name body: (_) @body) @definition.class
(class name: (_) @name body: (_) @body) @definition.class
(method_definition name: (_) @name body: (_) @body) @definition.method

; const f = () => {}, const f = function () {}
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function body: (_) @body) (function_expression body: (_) @body) (generator_function body: (_) @body)]) @definition.function

; exports.f = function () {}, module.exports.f = ..., Foo.prototype.m = function () {}
(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function

