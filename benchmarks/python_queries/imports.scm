; The statement; the language's `bindings` hook reads what names it binds.
(import_statement) @import
(import_from_statement) @import
