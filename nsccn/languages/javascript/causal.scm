; this.x = v: MUTATES
(assignment_expression left: (member_expression object: (this)) @target) @mutates
(augmented_assignment_expression left: (member_expression object: (this)) @target) @mutates
(update_expression argument: (member_expression object: (this)) @target) @mutates

; process.env.X, process.env["X"]: READS_CONFIG
(member_expression
  object: (member_expression object: (identifier) @_p property: (property_identifier) @_e)
  property: (property_identifier) @key
  (#eq? @_p "process") (#eq? @_e "env")) @config
(subscript_expression
  object: (member_expression object: (identifier) @_p property: (property_identifier) @_e)
  index: (string) @key
  (#eq? @_p "process") (#eq? @_e "env")) @config

; throw new X(...), throw X: PROPAGATES_ERROR
(throw_statement (new_expression constructor: [(identifier) (member_expression)] @type)) @error
(throw_statement (call_expression function: [(identifier) (member_expression)] @type)) @error

; anonymous function bodies (callbacks) are elided from skeletons too
(arrow_function body: (statement_block) @elide)
(function_expression body: (statement_block) @elide)
