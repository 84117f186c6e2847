; recv.field = v: MUTATES (the core keeps those on the receiver)
(assignment_statement left: (expression_list (selector_expression) @target)) @mutates
(inc_statement (selector_expression) @target) @mutates
(dec_statement (selector_expression) @target) @mutates

; os.Getenv("X"), os.LookupEnv("X"): READS_CONFIG
(call_expression
  function: (selector_expression operand: (identifier) @_os field: (field_identifier) @_fn)
  arguments: (argument_list . (interpreted_string_literal) @key)
  (#eq? @_os "os") (#match? @_fn "^(Getenv|LookupEnv)$")) @config

; return ..., errors.New(...) / fmt.Errorf(...) / &MyError{...}; panic(...): PROPAGATES_ERROR
(return_statement (expression_list
  (call_expression function: (selector_expression field: (field_identifier) @_fn) @type
  (#match? @_fn "^(New|Errorf|Wrap|Wrapf|WithStack|WithMessage)$")))) @error
(return_statement (expression_list
  (unary_expression operand: (composite_literal type: [(type_identifier) (qualified_type)] @type (#match? @type "Err"))))) @error
(return_statement (expression_list
  (composite_literal type: [(type_identifier) (qualified_type)] @type (#match? @type "Err")))) @error
(call_expression function: (identifier) @type (#eq? @type "panic")) @error

(func_literal body: (block) @elide)

; return ..., ErrNotFound / pkg.ErrNotFound: a sentinel error (a package-level variable)
(return_statement (expression_list (identifier) @type (#match? @type "^Err"))) @error
(return_statement (expression_list (selector_expression field: (field_identifier) @_f (#match? @_f "^Err")) @type)) @error

; package-level variables (sentinel errors resolve to them)
(source_file (var_declaration (var_spec name: (identifier) @name)) @global)
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name))) @global)
