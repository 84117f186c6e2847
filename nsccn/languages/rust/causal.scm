; self.x = v, self.x += v: MUTATES
(assignment_expression left: (field_expression value: (self)) @target) @mutates
(assignment_expression left: (field_expression value: (field_expression value: (self))) @target) @mutates
(compound_assignment_expr left: (field_expression value: (self)) @target) @mutates
(compound_assignment_expr left: (field_expression value: (field_expression value: (self))) @target) @mutates

; std::env::var("X"), env::var_os("X"): READS_CONFIG
(call_expression
  function: (scoped_identifier) @_f (#match? @_f "env::var(_os)?$")
  arguments: (arguments . (string_literal) @key)) @config

; f()? propagates f's error; Err(MyError::X); panic!(), bail!(): PROPAGATES_ERROR
(try_expression (call_expression function: [(identifier) (field_expression) (scoped_identifier)] @type)) @error
(call_expression
  function: (identifier) @_err (#eq? @_err "Err")
  arguments: (arguments . [(scoped_identifier path: [(identifier) (scoped_identifier)] @type)
                           (call_expression function: (scoped_identifier path: [(identifier) (scoped_identifier)] @type))
                           (struct_expression name: [(type_identifier) (scoped_type_identifier)] @type)])) @error
(macro_invocation macro: (identifier) @type (#match? @type "^(panic|bail|unimplemented|todo|unreachable)$")) @error

(closure_expression body: (block) @elide)
