"""Reading a repository: which files, each file's bytes, its parse, its history, a change."""
