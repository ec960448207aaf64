"""The recording mechanisms, one module each; :class:`graphview.capture.recorder.Recorder`
combines them over the shared state of :mod:`graphview.capture.state`."""
