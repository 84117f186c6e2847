; Calls and constructions; the callee as written (a.b.c), the extractor keeps chains only.
(call_expression function: [(identifier) (member_expression)] @callee) @reference.call
(new_expression constructor: [(identifier) (member_expression)] @callee) @reference.class
; `super(...)` in a constructor: the base class's (QueryLanguage.super_names reads `super` as `super()`)
(call_expression function: (super) @callee) @reference.call

; `new T().m()`: the method of the type just built (a typed reference, nsccn/languages/receivers.py)
(call_expression function: (member_expression
  object: (new_expression constructor: [(identifier) (member_expression)] @callee.new)
  property: [(property_identifier) (private_property_identifier)] @callee.method)) @reference.call
