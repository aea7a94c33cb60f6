"""Built-in kernels, one family per module; each registers through an entry point."""
