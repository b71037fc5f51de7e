"""Go rules, playouts and GTP-facing helpers."""
