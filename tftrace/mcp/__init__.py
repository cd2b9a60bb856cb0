"""`tftrace mcp`: tftrace's questions served to agents over the Model Context Protocol (stdio), a
front end like the command line; it alone imports the `mcp` package (the `tftrace[mcp]` extra)."""
