"""Trace decoding runs with the cyclic garbage collector paused (``reportgen.garbage_collector.paused``): a
decoded JSON tree holds no reference cycle, and the collections it started walked the growing tree over and
over (~1,500 young and ~12 full collections for six real ranks). The pause nests, spans threads, and leaves
the collector as it found it."""

from __future__ import annotations

import gc
import json
import threading

import orjson
import pytest

from reportgen.garbage_collector import paused
from reportgen.readers import kineto_decode, kineto_trace
from reportgen.readers.kineto_trace import read_trace
from reportgen.readers.trace_files import read_trace_file
from reportgen.traces import read as trace_read
from reportgen.traces.stream import EventWalk
from tests.support.trace_sets import rank_events, write_trace


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_stops_the_collector_and_restarts_it(collector_on):
    with paused():
        assert not gc.isenabled()
        with paused():  # nested
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still runs
    assert gc.isenabled()


def test_a_collector_stopped_before_stays_stopped(collector_on):
    gc.disable()
    with paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_exception_inside_restarts_the_collector(collector_on):
    with pytest.raises(ValueError):
        with paused():
            raise ValueError("bad trace")
    assert gc.isenabled()


def test_the_collector_restarts_when_the_last_of_two_threads_ends_its_pause(collector_on):
    inside, leave, seen = threading.Event(), threading.Event(), []

    def other():
        with paused():
            inside.set()
            leave.wait(10)
        seen.append(gc.isenabled())  # the main thread's pause still runs

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    with paused():
        leave.set()
        thread.join(10)
        assert not gc.isenabled()
    assert seen == [False]
    assert gc.isenabled()


class _Spy:
    """A decoder that notes whether the collector runs when it is called."""

    def __init__(self, decoder, states: list):
        self.decoder, self.states = decoder, states

    def decode(self, raw):
        self.states.append(gc.isenabled())
        return self.decoder.decode(raw)


def test_a_whole_trace_is_decoded_with_the_collector_paused(tmp_path, monkeypatch, collector_on):
    path = tmp_path / "rank0.pt.trace.json"
    write_trace(path, rank_events(1000.0, 5, 1.0), rank=0)
    states = []
    monkeypatch.setattr(kineto_decode, "_DECODER", _Spy(kineto_decode._DECODER, states))  # the typed decode
    monkeypatch.setattr(kineto_decode, "_FRAME_DECODER", _Spy(kineto_decode._FRAME_DECODER, states))  # in runs
    monkeypatch.setattr(kineto_decode, "_EVENTS_DECODER", _Spy(kineto_decode._EVENTS_DECODER, states))
    trace = read_trace(path)
    assert len(states) == 2 and not any(states)  # the document checked, its one run decoded
    assert len(trace.start_us) == 35 and trace.rank == 0
    assert gc.isenabled()


def test_a_whole_trace_read_event_by_event_is_decoded_with_the_collector_paused(tmp_path, monkeypatch,
                                                                                collector_on):
    path = tmp_path / "rank0.pt.trace.json"
    write_trace(path, rank_events(1000.0, 5, 1.0), rank=0)
    monkeypatch.setattr(kineto_trace, "_typed_columns", lambda *args: None)  # as a file the structs do not fit
    monkeypatch.setattr(kineto_trace, "WHOLE_IN_RUNS", False)
    decode, states = orjson.loads, []
    monkeypatch.setattr(orjson, "loads", lambda raw: states.append(gc.isenabled()) or decode(raw))
    trace = read_trace(path)
    assert states == [False]
    assert len(trace.start_us) == 35 and trace.rank == 0
    assert gc.isenabled()


def test_a_trace_left_to_the_stdlib_parser_is_decoded_with_the_collector_paused(tmp_path, monkeypatch,
                                                                                collector_on):
    path = tmp_path / "rank0.pt.trace.json"
    events = rank_events(1000.0, 3, 1.0)
    events[0]["args"] = {"External id": 10 ** 20}  # 21 digits: orjson would make it a float
    write_trace(path, events, rank=1)
    monkeypatch.setattr(kineto_trace, "_typed_columns", lambda *args: None)  # as a file the structs do not fit
    monkeypatch.setattr(kineto_trace, "WHOLE_IN_RUNS", False)
    decode, states = json.loads, []
    monkeypatch.setattr(json, "loads", lambda text, **kw: states.append(gc.isenabled()) or decode(text, **kw))
    trace = read_trace(path)
    assert states == [False]
    assert len(trace.start_us) == 21 and trace.rank == 1
    assert gc.isenabled()


def test_a_streamed_trace_is_decoded_with_the_collector_paused(tmp_path, monkeypatch, collector_on):
    path = tmp_path / "rank0.pt.trace.json"
    write_trace(path, rank_events(1000.0, 40, 1.0), rank=2)
    states = []

    class Recording(EventWalk):
        def __iter__(self):
            for event in super().__iter__():
                states.append(gc.isenabled())
                yield event

    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "0")  # every file streamed
    monkeypatch.setattr(trace_read, "EventWalk", Recording)
    monkeypatch.setattr(kineto_trace, "_stream_typed", lambda *args: None)  # as a file not framed in runs
    trace = read_trace(path)
    assert len(states) == 280 and not any(states)  # every event decoded inside a pause
    assert len(trace.start_us) == 280 and trace.rank == 2
    assert gc.isenabled()


def test_a_streamed_trace_framed_in_runs_is_decoded_with_the_collector_paused(tmp_path, monkeypatch, collector_on):
    path = tmp_path / "rank0.pt.trace.json"
    write_trace(path, rank_events(1000.0, 40, 1.0), rank=2)
    decode, states = kineto_trace.decode_events, []
    monkeypatch.setenv("REPORTGEN_STREAM_TRACE_MB", "0")  # every file streamed
    monkeypatch.setattr(kineto_trace, "decode_events", lambda raw: states.append(gc.isenabled()) or decode(raw))
    monkeypatch.setattr(trace_read, "EventWalk", None)  # never walked event by event
    trace = read_trace(path)
    assert states and not any(states)
    assert len(trace.start_us) == 280 and trace.rank == 2
    assert gc.isenabled()


def test_a_trace_file_is_read_and_converted_with_the_collector_paused(tmp_path, collector_on):
    # the decoded events are turned into columns and freed inside the pause: a pause around the decode alone
    # left the first young collection after it to walk what was still alive of it (854 objects here)
    path = tmp_path / "rank3.pt.trace.json"
    write_trace(path, rank_events(1000.0, 200, 1.0), rank=3)
    walked = []

    def seen(phase, info):
        if phase == "start":
            walked.append(len(gc.get_objects(generation=0)))

    was = gc.get_threshold()
    gc.collect()  # the young generation's count from zero
    gc.set_threshold(100)  # a young collection every 100 objects the collector is allowed to see
    gc.callbacks.append(seen)
    try:
        trace = read_trace_file(path)
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*was)
    assert all(n < 500 for n in walked), walked  # never the decoded events, only what the read keeps
    assert len(trace.start_us) == 1400 and trace.rank == 3
    assert gc.isenabled()
