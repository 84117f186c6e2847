; Calls and constructions; the callee as written (a.b.c), the extractor keeps chains only.
(call_expression function: [(identifier) (member_expression)] @callee) @reference.call
(new_expression constructor: [(identifier) (member_expression)] @callee) @reference.class

