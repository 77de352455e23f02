"""One function per page, returning frames: the page, its JSON twin and the CLI call the same one."""
