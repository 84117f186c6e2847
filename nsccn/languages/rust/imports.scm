(use_declaration) @import
(mod_item name: (identifier) @import.source !body) @import
