"""The engine: remember (merge), recall (hybrid rank), get, list, forget."""
