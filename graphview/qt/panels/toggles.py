"""The run options (retain_graph, grad mode, detach at, checkpoint, autocast, save_on_cpu, ...) and "Run again".

The form scrolls in a short dock; "Run again" stays below it, outside the scrolled part, so it is
in sight whatever the dock's height (last in the scrolled form, it sat below the fold at 1600x1000,
1366x768 and 1920x1080: a user who changed an option did not see how to apply it).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QFrame, QLineEdit, QPushButton, QScrollArea,
                               QSpinBox, QVBoxLayout, QWidget)

from graphview.core.options import APP_STEPS, AUTOCAST_DTYPES, GRAD_MODES, RunOptions, args_text, parse_args_text
from graphview.qt import theme as themes
from graphview.qt.plain import plain_label


class TogglesPanel(QWidget):
    """The run options; "Run again" starts a new run, earlier runs stay on the memory chart.

    The options' form is in :attr:`form_scroll`, which scrolls when the panel is shorter than the
    form; :attr:`run_button` is below it, never scrolled away."""

    sigRunRequested = Signal(object)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        fields = QWidget()
        form = QFormLayout(fields)
        self._add_autograd_options(form)
        self._add_memory_options(form)
        self._add_arguments(form)
        # the form scrolls in a short dock (else the window grew taller than its screen: 800x550
        # became 800x686); the button (and why it refused) does not
        self.form_scroll = QScrollArea()
        self.form_scroll.setWidgetResizable(True)
        self.form_scroll.setFrameShape(QFrame.NoFrame)
        self.form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.form_scroll.setWidget(fields)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.form_scroll)
        layout.addLayout(self._run_row())  # right below the form, the rest of a tall dock below it
        layout.addStretch(1)
        themes.changes().changed.connect(self.apply_theme)  # a bound slot: it goes with the panel
        self.apply_theme()

    def _run_row(self) -> QVBoxLayout:
        """"Run again", and above it the line that says why it refused (an open quote in the
        arguments, an option out of range): below the scrolled form, both in sight (last in the
        form, the line came below the fold of a short dock, and was not seen)."""
        self.arguments_error = plain_label()  # quotes a trace's arguments: text, never HTML
        self.arguments_error.setWordWrap(True)
        self.arguments_error.hide()
        self.run_button = QPushButton("Run again with these options")
        self.run_button.clicked.connect(self._run_again)
        row = QVBoxLayout()
        row.setContentsMargins(9, 6, 9, 9)
        row.addWidget(self.arguments_error)
        row.addWidget(self.run_button)
        return row

    def apply_theme(self, theme=None) -> None:
        """The refusal in the theme's error colour (a fixed #b91c1c stood 2.4:1 on the dark panel)."""
        self.arguments_error.setStyleSheet(f"color:{themes.current().error}")

    def _add_autograd_options(self, form: QFormLayout) -> None:
        """What backward is told, the grad mode, zero_grad, the device, the steps, where to detach."""
        self.retain = QCheckBox("retain_graph")
        self.retain.setToolTip("pass retain_graph=True to every backward: the graph and its saved tensors stay")
        self.create = QCheckBox("create_graph")
        self.create.setToolTip("pass create_graph=True to every backward: gradients get graphs of their own")
        self.mode = QComboBox()
        self.mode.addItems(list(GRAD_MODES))
        self.accumulate = QCheckBox("skip zero_grad")
        self.accumulate.setToolTip("accumulate gradients across steps: zero_grad calls do nothing")
        self.device = QComboBox()
        self.device.addItem("script's choice", None)
        self.steps = QSpinBox()
        self.steps.setRange(1, 1000)
        self.steps.setValue(APP_STEPS)
        self.detach = QComboBox()
        self.detach.setEditable(True)
        self.detach.addItem("")
        self.detach.setToolTip("op:N, line:N or a module path; right-click a node for suggestions")
        form.addRow(self.retain)
        form.addRow(self.create)
        form.addRow("grad mode", self.mode)
        form.addRow(self.accumulate)
        form.addRow("device", self.device)
        form.addRow("steps", self.steps)
        self.steps.setToolTip("how many times a step script's step() is called")
        form.addRow("detach at", self.detach)

    def _add_memory_options(self, form: QFormLayout) -> None:
        """What-if memory: the levers that change what autograd keeps."""
        self.checkpoint = QLineEdit()
        self.checkpoint.setPlaceholderText("none (e.g. encoder.layers.*)")
        self.checkpoint.setToolTip("module paths whose forward runs under torch.utils.checkpoint.checkpoint("
                                   "..., use_reentrant=False), comma-separated; * stands for one part "
                                   "(encoder.layers.*); right-click a module box to checkpoint it")
        self.checkpoint.returnPressed.connect(self._run_again)
        form.addRow("checkpoint", self.checkpoint)
        self.autocast = QComboBox()
        self.autocast.addItem("off", None)
        for dtype in AUTOCAST_DTYPES:
            self.autocast.addItem(dtype, dtype)
        self.autocast.setToolTip("run the forward (step()) under torch.autocast(device_type, dtype=...): "
                                 "bfloat16 on the CPU, float16 or bfloat16 on CUDA")
        form.addRow("autocast", self.autocast)
        self.save_on_cpu = QCheckBox("save_on_cpu")
        self.save_on_cpu.setToolTip("run each step under torch.autograd.graph.save_on_cpu(): saved tensors wait "
                                    "on the CPU until backward (nothing changes for tensors already on the CPU)")
        form.addRow(self.save_on_cpu)

    def _add_arguments(self, form: QFormLayout) -> None:
        """The script's own arguments (why they do not parse is said above "Run again")."""
        self.arguments = QLineEdit()
        self.arguments.setPlaceholderText("none (the script's sys.argv[1:])")
        self.arguments.setToolTip("the script's own arguments (its sys.argv[1:]), as after python script.py "
                                  "on a command line; quotes group words")
        self.arguments.returnPressed.connect(self._run_again)
        form.addRow("arguments", self.arguments)

    def set_devices(self, devices: list[str]) -> None:
        current = {self.device.itemData(i) for i in range(self.device.count())}
        for device in devices:
            if device not in current:
                self.device.addItem(device, device)

    def set_options(self, options: RunOptions) -> None:
        self.retain.setChecked(options.retain_graph)
        self.create.setChecked(options.create_graph)
        self.mode.setCurrentText(options.grad_mode)
        self.accumulate.setChecked(options.accumulate)
        # a trace's options are its own: a count past what the box holds is shown as the most it holds
        # (QSpinBox takes a C int: 2**31 raised OverflowError and the trace did not open)
        self.steps.setValue(min(max(options.steps, self.steps.minimum()), self.steps.maximum()))
        self.detach.setCurrentText(", ".join(options.detach_at))
        self.checkpoint.setText(", ".join(options.checkpoint))
        self.autocast.setCurrentIndex(max(0, self.autocast.findData(options.autocast)))
        self.save_on_cpu.setChecked(options.save_on_cpu)
        self.arguments.setText(args_text(options.args))
        self.arguments_error.hide()

    def options(self) -> RunOptions:
        """The options set here; raises ValueError for arguments no shell would split (an open quote)."""
        detach = [s.strip() for s in self.detach.currentText().split(",") if s.strip()]
        return RunOptions(retain_graph=self.retain.isChecked(), create_graph=self.create.isChecked(),
                          grad_mode=self.mode.currentText(), accumulate=self.accumulate.isChecked(),
                          device=self.device.currentData(), steps=self.steps.value(), detach_at=detach,
                          args=parse_args_text(self.arguments.text()), checkpoint=self.checkpoint_paths(),
                          autocast=self.autocast.currentData(), save_on_cpu=self.save_on_cpu.isChecked())

    def checkpoint_paths(self) -> list[str]:
        return [s.strip() for s in self.checkpoint.text().split(",") if s.strip()]

    def _run_again(self) -> None:
        try:
            options = self.options()
        except ValueError as exc:
            self.arguments_error.setText(f"{exc}: close the quote, then run again")
            self.arguments_error.show()
            return
        try:
            options.validate()
        except ValueError as exc:
            self.arguments_error.setText(str(exc))
            self.arguments_error.show()
            return
        self.arguments_error.hide()
        self.sigRunRequested.emit(options)

    def request_detach(self, spec: str) -> None:
        self.detach.setCurrentText(spec)
        self._run_again()

    def request_checkpoint(self, pattern: str) -> None:
        """Checkpoint one more module (a module box's context menu, a suggestion's "try it") and re-run."""
        paths = self.checkpoint_paths()
        if pattern not in paths:
            paths.append(pattern)
        self.checkpoint.setText(", ".join(paths))
        self._run_again()
