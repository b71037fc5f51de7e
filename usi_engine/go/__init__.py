"""Go rules, playouts and GTP-facing helpers."""


def __getattr__(name):
    # GoBoard is imported lazily so `import usi_engine.go` stays cheap (no numba load) for GTP start-up.
    if name == "GoBoard":
        from usi_engine.go.goboard import GoBoard

        return GoBoard
    raise AttributeError(f"module 'usi_engine.go' has no attribute {name!r}")
