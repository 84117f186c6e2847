;; Written for NSCCN (MIT) against the zig grammar of tree-sitter-language-pack 0.9.0, in the
;; standard tags capture names (@name, @definition.*, @reference.*, @doc).

((doc_comment)? @doc . (Decl (FnProto function: (IDENTIFIER) @name)) @definition.function)

(Decl (VarDecl (IDENTIFIER) @name (ErrorUnionExpr (SuffixExpr (ContainerDecl))))) @definition.class

(SuffixExpr variable_type_function: (IDENTIFIER) @name (FnCallArguments)) @reference.call

(FieldOrFnCall function_call: (IDENTIFIER) @name) @reference.call
