"""The command line, one module per command group. The top layer: may import everything."""
