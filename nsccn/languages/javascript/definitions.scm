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
  right: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]
  (#not-eq? @name "exports")) @definition.function
; module.exports = function name () {}: the function's own name; an anonymous one stays `exports`
(assignment_expression
  left: (member_expression property: (property_identifier) @_e (#eq? @_e "exports"))
  right: (function_expression name: (identifier) @name body: (_) @body)) @definition.function
(assignment_expression
  left: (member_expression property: (property_identifier) @name (#eq? @name "exports"))
  right: [(arrow_function body: (_) @body) (function_expression !name body: (_) @body)]) @definition.function

