; raise X(...), raise X, raise mod.X
(raise_statement (call function: [(identifier) (attribute)] @type)) @error
(raise_statement [(identifier) (attribute)] @type) @error

; self.x = v, self.x += v, self.x.y = v (the core keeps MUTATES on `self.` only)
(assignment left: (attribute object: (identifier) @_self) @target (#any-of? @_self "self" "cls")) @mutates
(augmented_assignment left: (attribute object: (identifier) @_self) @target (#any-of? @_self "self" "cls")) @mutates
(assignment left: (attribute object: (attribute object: (identifier) @_self) @target) (#any-of? @_self "self" "cls")) @mutates
(augmented_assignment left: (attribute object: (attribute object: (identifier) @_self) @target) (#any-of? @_self "self" "cls")) @mutates
(assignment left: (attribute object: (attribute object: (attribute object: (identifier) @_self) @target)) (#any-of? @_self "self" "cls")) @mutates
(augmented_assignment left: (attribute object: (attribute object: (attribute object: (identifier) @_self) @target)) (#any-of? @_self "self" "cls")) @mutates
(assignment left: (pattern_list (attribute object: (identifier) @_self) @target) (#any-of? @_self "self" "cls")) @mutates
(assignment left: (subscript value: (attribute object: (identifier) @_self) @target) (#any-of? @_self "self" "cls")) @mutates
(augmented_assignment left: (subscript value: (attribute object: (identifier) @_self) @target) (#any-of? @_self "self" "cls")) @mutates

; self.items.append(x): a method that changes the object it is called on
(call function: (attribute object: (attribute object: (identifier) @_self) @target attribute: (identifier) @_m)
  (#any-of? @_self "self" "cls")
  (#any-of? @_m "append" "extend" "insert" "remove" "pop" "popitem" "clear" "update" "add" "discard"
    "setdefault" "sort" "reverse" "appendleft" "extendleft" "rotate" "__setitem__" "__delitem__" "write")) @mutates

; os.environ["X"], environ["X"], os.getenv("X"), os.environ.get("X"), getenv("X")
(subscript value: [(attribute object: (identifier) @_os attribute: (identifier) @_env) (identifier) @_env]
  subscript: (string (string_content) @key) (#eq? @_env "environ")) @config
(call function: (attribute object: (identifier) @_os attribute: (identifier) @_fn)
  arguments: (argument_list . (string (string_content) @key)) (#eq? @_os "os") (#eq? @_fn "getenv")) @config
(call function: (identifier) @_fn arguments: (argument_list . (string (string_content) @key)) (#eq? @_fn "getenv")) @config
(call function: (attribute object: [(attribute attribute: (identifier) @_env) (identifier) @_env] attribute: (identifier) @_fn)
  arguments: (argument_list . (string (string_content) @key)) (#eq? @_env "environ") (#any-of? @_fn "get" "setdefault")) @config
