"""The runner's pipe: few writes, and nothing the script could see lost."""

from __future__ import annotations

import json
import os
import select
import time

import pytest

from graphview.capture import runner
from graphview.capture.runner import EventPipe
from graphview.core.channel import BatchReader
from graphview.core.records import event_encoder


def _readable(fd: int) -> bytes:
    chunks = []
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _events(data: bytes) -> list[dict]:
    """The events of the batches the pipe wrote, each batch whole."""
    reader = BatchReader()
    events = [event for batch in reader.feed(data) for event in batch]
    assert reader.waiting == 0
    return events


@pytest.fixture
def pipe(monkeypatch):
    # a minute: what this test sees does not depend on how busy the machine is
    monkeypatch.setattr(runner, "WRITE_EVERY_S", 60.0)
    monkeypatch.setattr(runner, "LATE_WRITE_S", 60.0)
    read_fd, write_fd = os.pipe()
    pipe = EventPipe(write_fd)
    yield pipe, read_fd
    pipe.close()
    os.close(read_fd)


def test_lines_wait_for_the_handover_and_go_in_order(pipe):
    pipe, read_fd = pipe
    events = [{"ev": "node", "vid": i, "next": [[None, 0]]} for i in range(50)]
    for event in events:
        pipe(event)
    assert _readable(read_fd) == b""  # inside one torch call: not written yet
    pipe.handover()
    assert _events(_readable(read_fd)) == events


def test_output_and_boundaries_are_written_at_once(pipe):
    pipe, read_fd = pipe
    pipe({"ev": "op", "oid": 1})
    pipe({"ev": "stdout", "text": "printed just before a crash\n"})
    assert [event["ev"] for event in _events(_readable(read_fd))] == ["op", "stdout"]
    pipe({"ev": "step_end", "step": 1, "result": None})
    assert [event["ev"] for event in _events(_readable(read_fd))] == ["step_end"]


def test_a_long_native_call_still_writes_every_few_milliseconds(pipe, monkeypatch):
    pipe, read_fd = pipe
    monkeypatch.setattr(runner, "WRITE_EVERY_S", 0.002)
    pipe({"ev": "bw_node", "bid": 1, "vid": 1, "grads_in": None})
    time.sleep(0.01)
    pipe({"ev": "bw_node", "bid": 1, "vid": 2, "grads_in": None})
    time.sleep(0.01)
    pipe({"ev": "bw_node", "bid": 1, "vid": 3, "grads_in": None})
    # each came more than WRITE_EVERY_S after the write before: written with no handover
    assert [event["vid"] for event in _events(_readable(read_fd))] == [1, 2, 3]
    pipe({"ev": "bw_node_done", "bid": 1, "vid": 3, "grads_out": []})  # (within WRITE_EVERY_S: waits)
    pipe.handover()
    assert [event["ev"] for event in _events(_readable(read_fd))] == ["bw_node_done"]


def test_an_event_a_finaliser_emits_while_a_batch_is_encoded_goes_once(pipe, monkeypatch):
    """The collector runs finalisers where it likes, inside the encoding of a batch too: what one
    emits then is neither sent twice (with the batch being encoded, then again) nor lost."""
    pipe, read_fd = pipe
    monkeypatch.setattr(runner, "WRITE_EVERY_S", 0.0)  # (each event would be written at once)
    real, emitted = pipe._encode, []

    def encode(events):
        data = real(events)
        if not emitted:
            emitted.append(True)
            pipe({"ev": "node_dead", "vid": 99})  # as a node's finaliser, run by the collector here
        return data

    monkeypatch.setattr(pipe, "_encode", encode)
    pipe({"ev": "node_dead", "vid": 1})
    pipe.handover()
    assert [event["vid"] for event in _events(_readable(read_fd))] == [1, 99]


def test_close_writes_what_is_left(pipe):
    pipe, read_fd = pipe
    pipe({"ev": "release", "sid": 3})
    assert _readable(read_fd) == b""
    pipe.close()
    assert _events(_readable(read_fd)) == [{"ev": "release", "sid": 3}]


def test_the_encoder_writes_what_json_does():
    event = {"ev": "tensor", "name": "poids_é", "stats": {"min": -1.5e-45, "max": 3.4028234663852886e38},
             "values": [0.1, -0.0, 1, True, None], "shape": [2, 3], "text": 'a "quoted"\nline', "odd": object()}
    assert event_encoder()(event) == json.dumps(event, separators=(",", ":"), default=str)


def test_lines_no_handover_follows_are_written_soon(monkeypatch):
    """The script frees a graph (node deaths come from its `del`), then runs plain Python: the
    pipe's own thread writes them (no later event does: WRITE_EVERY_S is out of reach)."""
    monkeypatch.setattr(runner, "WRITE_EVERY_S", 60.0)
    read_fd, write_fd = os.pipe()
    pipe = EventPipe(write_fd)
    try:
        pipe({"ev": "node_dead", "vid": 7})
        deadline = time.monotonic() + 5
        seen = b""
        while not seen and time.monotonic() < deadline:
            time.sleep(0.005)
            seen = _readable(read_fd)
        assert _events(seen) == [{"ev": "node_dead", "vid": 7}]
    finally:
        pipe.close()
        os.close(read_fd)


def test_a_stop_that_comes_while_a_batch_is_written_waits_for_the_whole_batch(pipe, monkeypatch):
    """The runner's SIGTERM handler raises Stop in the script's thread. Raised between taking the
    events and sending them it would lose them (or send them twice): it comes once the batch is
    written, and a stop outside a write is raised at once."""
    import signal

    pipe, read_fd = pipe

    class Stop(Exception):
        pass

    def stop():
        raise Stop

    def on_term(signum, frame):
        if not pipe.stop_after_write(stop):
            stop()

    real = pipe._encode

    def encode(events):
        on_term(signal.SIGTERM, None)  # as Python runs the handler: at a bytecode of this thread's
        return real(events)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        monkeypatch.setattr(pipe, "_encode", encode)
        pipe({"ev": "release", "sid": 1})
        pipe({"ev": "release", "sid": 2})
        with pytest.raises(Stop):
            pipe.handover()
        assert [event["sid"] for event in _events(_readable(read_fd))] == [1, 2]  # whole, once
        monkeypatch.setattr(pipe, "_encode", real)
        with pytest.raises(Stop):  # a real signal, not writing: at once
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10 ** 6):
                pass
        pipe({"ev": "release", "sid": 3})
        pipe.handover()
        assert [event["sid"] for event in _events(_readable(read_fd))] == [3]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_an_event_comes_in_while_another_thread_writes_a_batch(pipe, monkeypatch):
    """The pipe's own thread writes what waits (a long backward's events) while the script's thread
    goes on recording: its events are appended without waiting for that write (a lock taken by
    every event was most of what the pipe cost a step), and none is lost or sent twice."""
    import threading

    pipe, read_fd = pipe
    real, encoding, release = pipe._encode, threading.Event(), threading.Event()

    def encode(events):  # the late writer, held inside its batch
        if threading.current_thread().name == "writer":
            encoding.set()
            assert release.wait(10)
        return real(events)

    monkeypatch.setattr(pipe, "_encode", encode)
    pipe({"ev": "node_dead", "vid": 1})
    writer = threading.Thread(target=pipe.handover, name="writer")
    writer.start()
    assert encoding.wait(10)
    script = threading.Thread(target=lambda: [pipe({"ev": "node_dead", "vid": vid}) for vid in (2, 3)])
    script.start()
    script.join(5)
    appended_while_writing = not script.is_alive()
    release.set()
    writer.join(10)
    script.join(10)
    pipe.handover()
    assert appended_while_writing
    assert [event["vid"] for event in _events(_readable(read_fd))] == [1, 2, 3]


def test_no_compact_kind_is_written_at_once():
    """The pipe looks at the kind of a dict only (a tuple's is never one written at once)."""
    from graphview.core.compact_events import LAYOUTS

    assert not runner._WRITE_AT_ONCE & set(LAYOUTS)


@pytest.mark.parametrize("gather", [True, False])
def test_a_batch_in_pieces_is_written_whole_and_in_order_through_short_writes(monkeypatch, gather):
    """A batch's pieces (the pickler's frames: BatchEncoder.encode_parts) go in one ``writev``; one
    cut short (a signal, a full pipe) leaves exactly the bytes not written, and the next write
    goes on from there. ``gather`` False: a system without ``writev`` (the pieces joined)."""
    writes = []

    def short_writev(fd, parts):  # at most 7 bytes a call, as a pipe under pressure may take
        data = b"".join(bytes(part) for part in parts)[:7]
        writes.append(data)
        return len(data)

    def short_write(fd, data):
        return short_writev(fd, [data])

    monkeypatch.setattr(runner, "_WRITEV", short_writev if gather else None)
    monkeypatch.setattr(runner.os, "write", short_write)
    parts = [b"header", b"", b"a frame of the pickle", b"x" * 40, b"end"]
    expected = b"".join(parts)
    runner._write_parts(3, parts)
    assert parts == [] and b"".join(writes) == expected and len(writes) == -(-len(expected) // 7)
