; this.x = v: MUTATES
(assignment_expression left: (field_access object: (this)) @target) @mutates
(update_expression (field_access object: (this)) @target) @mutates

; System.getenv("X"): READS_CONFIG
(method_invocation
  object: (identifier) @_s (#eq? @_s "System")
  name: (identifier) @_fn (#eq? @_fn "getenv")
  arguments: (argument_list . (string_literal) @key)) @config

; throw new X(...), `throws X`: PROPAGATES_ERROR
(throw_statement (object_creation_expression type: [(type_identifier) (scoped_type_identifier)] @type)) @error
(throws [(type_identifier) (scoped_type_identifier)] @type) @error

(lambda_expression body: (block) @elide)
