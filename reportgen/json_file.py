"""Reading a small JSON document whole, from a file nobody vouches for.

Rule outputs, report.json, timeline.json and friends are read whole. Read with ``Path.read_text``
a FIFO named ``CPUBottleneck.json`` hung the run, a symlink to ``/dev/zero`` grew memory without
bound, a field nested 100,000 deep raised RecursionError (exit 3), a UTF-8 byte-order mark was
"malformed JSON" and a 401-digit integer became an OverflowError wherever it was formatted.
``read_json_file`` reads through the one guard of every user file (``user_file``: a regular file,
opened non-blocking so a FIFO cannot hang the open, within a size bound), accepts a BOM, and rejects nesting deeper than ``MAX_DEPTH`` and integers
beyond a float's range, each with a ``JsonFileError`` whose text says why in a few words.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterable

from reportgen.environment import megabytes
from reportgen.user_file import UserFileError, read_user_file

# No rule output or report.json comes near the default bound, REPORTGEN_MAX_JSON_MB (256 MB; the largest
# real report.json seen: ~2 MB).
# SageMaker's rule outputs nest 5 levels, report.json 8: deeper is damage, and deep nesting breaks
# every recursive consumer (json.dumps of the report, template rendering).
MAX_DEPTH = 64
_FLOAT_MAX = sys.float_info.max


class JsonFileError(UserFileError):
    """Why a file could not be used, in a few words (the caller adds the file name)."""


def read_json_file(path: Path, max_bytes: int | None = None, duplicates: list[str] | None = None) -> Any:
    """The JSON value in ``path``; raises ``JsonFileError`` (or ``OSError`` for I/O errors).
    ``duplicates``: when given, collects the keys that an object holds twice (the last one wins, as in
    every JSON reader, but a caller can say so instead of dropping the first silently)."""
    bound = megabytes("REPORTGEN_MAX_JSON_MB") if max_bytes is None else max_bytes
    try:
        raw = read_user_file(Path(path), bound, "a JSON file", "REPORTGEN_MAX_JSON_MB")
    except UserFileError as err:
        raise JsonFileError(str(err)) from None
    try:
        text = raw.decode("utf-8-sig")  # a BOM, as Windows tools write it, is not data
    except UnicodeDecodeError:
        raise JsonFileError("not UTF-8 text") from None
    hook = None
    if duplicates is not None:
        def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            out = dict(pairs)
            if len(out) < len(pairs):
                seen: set[str] = set()
                for k, _ in pairs:
                    if k in seen:
                        duplicates.append(k)
                    seen.add(k)
            return out
    try:
        value = json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as err:
        raise JsonFileError(f"malformed JSON at line {err.lineno} column {err.colno} ({err.msg})") from None
    except RecursionError:
        raise JsonFileError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as err:  # an integer literal over Python's digit limit
        raise JsonFileError(f"unusable JSON ({err})") from None
    check_value(value)
    return value


def check_value(value: Any) -> None:
    """Raise ``JsonFileError`` for nesting deeper than MAX_DEPTH or an integer no float can hold
    (walked without recursion; a path is spelled out only for containers and for the error)."""
    _check_int(value, "")
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise JsonFileError(f"JSON nested deeper than {MAX_DEPTH} levels")
        in_dict = isinstance(item, dict)
        children: Iterable[tuple[Any, Any]] = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, f"{where}.{key}" if in_dict else f"{where}[{key}]"))
            elif type(child) is int and not -_FLOAT_MAX <= child <= _FLOAT_MAX:  # type(): a bool is no number here
                _check_int(child, f"{where}.{key}" if in_dict else f"{where}[{key}]")


def _check_int(item: Any, where: str) -> None:
    if type(item) is int and not -_FLOAT_MAX <= item <= _FLOAT_MAX:
        raise JsonFileError(f"an integer of {len(str(abs(item)))} digits at {where.lstrip('.') or 'the top'} "
                            "(beyond any number a report can show)")
