"""ImageExportDialog: File > Export > Graph as PNG / SVG / PDF: the file, its format, legend and caption."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout,
                               QLineEdit, QPushButton, QVBoxLayout, QWidget)

from graphview.qt.plain import plain_label
from graphview.qt.widgets.buttons import words_only

FORMATS = {".png": "PNG", ".svg": "SVG", ".pdf": "PDF"}
PATTERN = ";;".join(f"{name} (*{suffix})" for suffix, name in FORMATS.items())


class ImageExportDialog(QDialog):
    """Asks where to write the graph's picture and whether it carries the legend and the caption.

    ``path`` comes in with the suggested name in the folder last saved to; the format follows its
    suffix, and choosing another format changes the suffix. Accepted, :meth:`path`,
    :meth:`with_legend`, :meth:`with_caption` and :meth:`theme` say what to write.
    """

    def __init__(self, parent: QWidget | None, path: str, caption: str, legend: bool = True,
                 with_caption: bool = True, light: bool = False) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export graph image")
        self.setMinimumWidth(560)
        self.file = QLineEdit(path)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self.browse)
        file_row = QHBoxLayout()
        file_row.addWidget(self.file, 1)
        file_row.addWidget(browse)
        self.format = QComboBox()
        for suffix, name in FORMATS.items():
            self.format.addItem(name, suffix)
        self._follow_suffix()
        self.format.currentIndexChanged.connect(self._change_suffix)
        self.file.textEdited.connect(self._follow_suffix)
        self.legend = QCheckBox("Legend below the graph (node kinds, states and arrows)")
        self.legend.setChecked(legend)
        self.caption = QCheckBox("Caption above the graph:")
        self.caption.setChecked(with_caption)
        self.caption_text = plain_label(caption or "(no event shown)")  # the trace's names: text, never HTML
        self.caption_text.setWordWrap(True)
        self.caption_text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.caption_text.setStyleSheet("margin-left:22px")  # (the palette's text colour: it reads on either theme)
        self.caption.setEnabled(bool(caption))
        # one theme per picture, caption and legend included: the window's, or light for paper
        self.light = QCheckBox("Light theme (for print), whatever the window's theme")
        self.light.setChecked(light)
        form = QFormLayout()
        form.addRow("File", file_row)
        form.addRow("Format", self.format)
        buttons = words_only(QDialogButtonBox(QDialogButtonBox.Save | QDialogButtonBox.Cancel))
        buttons.button(QDialogButtonBox.Save).setText("Export")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.export_button = buttons.button(QDialogButtonBox.Save)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        for widget in (self.legend, self.caption, self.caption_text, self.light):
            layout.addWidget(widget)
        layout.addWidget(buttons)

    def path(self) -> str:
        """The file to write, with the chosen format's suffix when it was typed without one."""
        path = os.path.expanduser(self.file.text().strip())
        if path and os.path.splitext(path)[1].lower() not in FORMATS:
            path += self.format.currentData()
        return path

    def with_legend(self) -> bool:
        return self.legend.isChecked()

    def with_caption(self) -> bool:
        return self.caption.isChecked() and self.caption.isEnabled()

    def theme(self) -> str | None:
        """The theme the picture is drawn in: None (the window's) or ``"light"``."""
        return "light" if self.light.isChecked() else None

    def browse(self) -> None:
        """Choose the file in a file dialog that starts at the one in the field."""
        selected = f"{self.format.currentText()} (*{self.format.currentData()})"
        path, _ = QFileDialog.getSaveFileName(self, "Export graph image", self.path(), PATTERN, selected)
        if path:
            self.file.setText(path)
            self._follow_suffix()

    def accept(self) -> None:
        if not self.path():
            self.file.setPlaceholderText("a file name is needed")
            self.file.setFocus()
            return
        super().accept()

    def _follow_suffix(self) -> None:
        suffix = os.path.splitext(self.file.text().strip())[1].lower()
        if suffix in FORMATS:
            self.format.blockSignals(True)
            self.format.setCurrentIndex(self.format.findData(suffix))
            self.format.blockSignals(False)

    def _change_suffix(self) -> None:
        root, suffix = os.path.splitext(self.file.text().strip())
        if suffix.lower() in FORMATS or not suffix:
            self.file.setText(root + self.format.currentData())
