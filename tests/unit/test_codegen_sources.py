"""The compiled codecs (jackpot/codegen.py) can be read where they run: a traceback through
one shows its source lines, ``inspect`` (and so pdb) finds its source; and every codec the
controller and the table agent use is compiled when their modules are imported, none on a
first request."""

from __future__ import annotations

import ast
import inspect
import json
import linecache
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from jackpot import codegen, data
from jackpot.data import record_from_data
from jackpot.results import AcceptedWager, SettleResult
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.wire import to_message
from tests.unit.test_compiled_codecs import FROM_DATA, FROM_MESSAGE, TO_MESSAGE

ROOT = Path(__file__).resolve().parents[2]

WAGER = {"seat": 2, "kind": "progressive", "amount_cents": "100"}


def _text(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


def test_a_traceback_through_a_compiled_decoder_shows_its_lines() -> None:
    with pytest.raises(ValueError) as caught:
        record_from_data(AcceptedWager, {**WAGER, "amount_cents": "1.5"})
    text = _text(caught.value)
    assert 'File "<jackpot.codegen data decoder of jackpot.results.AcceptedWager>"' in text
    # the line that failed, printed under its frame as for any file
    frame = text.split("<jackpot.codegen data decoder of jackpot.results.AcceptedWager>")[1]
    assert "= _int(value)" in frame.splitlines()[1]


def test_a_traceback_through_nested_compiled_decoders_shows_each() -> None:
    reply = json.loads(
        '{"table_id": "t1", "round_id": 1, "results": [{"seat": "x"}], "meters": [],'
        ' "journal": {"epoch": "e", "seq": 1}}'
    )
    with pytest.raises(ValueError) as caught:
        record_from_data(SettleResult, reply)
    frames = [
        frame
        for frame in traceback.extract_tb(caught.value.__traceback__)
        if frame.filename.startswith("<jackpot.codegen ")
    ]
    assert list(dict.fromkeys(frame.filename for frame in frames)) == [  # (and a listcomp's)
        "<jackpot.codegen data decoder of jackpot.results.SettleResult>",
        "<jackpot.codegen data decoder of jackpot.results.SeatResult>",
    ]
    assert all(frame.line for frame in frames)  # each with its source line
    assert "_int(value)" in (frames[-1].line or "")


def test_a_traceback_through_a_compiled_encoder_shows_its_lines() -> None:
    with pytest.raises(AttributeError) as caught:
        to_message(object(), pb.MeterValue)  # no fields: refused on the encoder's first read
    text = _text(caught.value)
    assert 'File "<jackpot.codegen wire encoder of jackpot.v1.MeterValue>", line 3' in text
    assert "    value = record.meter_id" in text


def test_the_source_is_found_as_a_file_s_is_and_survives_checkcache() -> None:
    decode = data._DECODERS[AcceptedWager]
    linecache.checkcache()  # what traceback and pdb do first: a pseudo-file is kept
    source = inspect.getsource(decode)  # what pdb's list and ll read
    assert source.startswith("def function(data):\n")
    assert "if 'seat' in data:" in source
    filename = decode.__code__.co_filename
    assert linecache.getline(filename, 1) == "def function(data):\n"
    assert filename in codegen.COMPILED


def test_each_compiled_function_has_its_own_name() -> None:
    names = [name for name in codegen.COMPILED if name.startswith("<jackpot.codegen ")]
    assert len(names) == len(set(names)) == len(codegen.COMPILED)


def test_a_name_given_to_other_source_is_made_unique() -> None:
    first = codegen.FunctionSource("x", "test twin")
    first.lines.append("    return 1")
    second = codegen.FunctionSource("x", "test twin")
    second.lines.append("    return 2")
    one, two = first.compile(), second.compile()
    assert one.__code__.co_filename == "<jackpot.codegen test twin>"
    assert two.__code__.co_filename == "<jackpot.codegen test twin #2>"
    assert linecache.getline(two.__code__.co_filename, 2) == "    return 2\n"


IMPORTED_THEN_LISTED = """
import controller.runtime.server, table_agent.client  # what both starts import
from jackpot import codegen, data, wire
compiled = list(codegen.COMPILED)
later = [
    name
    for function in [*data._DECODERS.values(), *wire._ENCODERS.values(), *wire._DECODERS.values()]
    for name, value in function.__globals__.items()
    if isinstance(value, codegen._Later)
]
print(repr((compiled, later)))
"""


def test_every_codec_exists_before_the_first_call() -> None:
    """In a new process: importing the controller's server and the agent's client compiles
    every codec they use, each stand-in resolved (no codec is compiled on a first call)."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED_THEN_LISTED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    compiled, later = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert later == []

    for record_type in FROM_DATA:
        name = f"{record_type.__module__}.{record_type.__qualname__}"
        assert f"<jackpot.codegen data decoder of {name}>" in compiled
    for _, message_type in TO_MESSAGE:
        assert f"<jackpot.codegen wire encoder of {message_type.DESCRIPTOR.full_name}>" in compiled
    for record_type, message_type in FROM_MESSAGE:
        name = f"{record_type.__module__}.{record_type.__qualname__}"
        into = f"{message_type.DESCRIPTOR.full_name} into {name}"
        assert f"<jackpot.codegen wire decoder of {into}>" in compiled
