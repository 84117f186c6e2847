; Calls of a name or a dotted chain (`f()`, `self.m()`, `os.path.join()`); anything else
; (`a().b()`, `x[0]()`) has no name to resolve and the core drops it.
(call function: [(identifier) (attribute)] @callee) @reference.call

; Bases of a class (keyword arguments such as metaclass= are no base).
(class_definition superclasses: (argument_list [(identifier) (attribute)] @name @reference.inherits))
