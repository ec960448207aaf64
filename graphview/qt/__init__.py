"""Qt widgets (PySide6, pyqtgraph). Never imports torch or graphview.capture."""
