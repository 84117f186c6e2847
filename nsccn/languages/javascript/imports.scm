; ES modules, re-exports and CommonJS require; the language module reads the bindings.
(import_statement source: (string) @import.source) @import
(export_statement source: (string) @import.source) @import
(call_expression
  function: (identifier) @_require (#eq? @_require "require")
  arguments: (arguments . (string) @import.source)) @import

; export default X, module.exports = X
(export_statement "default" [(identifier) (function_declaration) (class_declaration) (class)] @name) @export
(assignment_expression
  left: (member_expression object: (identifier) @_m property: (property_identifier) @_e)
  (#eq? @_m "module") (#eq? @_e "exports")
  right: (identifier) @name) @export
; export { X as Y }: Y names X for importers
(export_statement (export_clause) @name !source) @export
