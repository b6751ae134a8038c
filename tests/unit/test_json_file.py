"""read_json_file's duplicate-key report and its limits (the typed rewrite of its hook kept them)."""

import pytest

from reportgen.json_file import JsonFileError, read_json_file


def test_keys_given_twice_are_collected_and_the_last_value_wins(tmp_path):
    path = tmp_path / "doc.json"
    path.write_text('{"a": 1, "b": 2, "a": 3, "a": 4, "c": {"x": 1, "x": 2}}')
    duplicates: list[str] = []
    assert read_json_file(path, duplicates=duplicates) == {"a": 4, "b": 2, "c": {"x": 2}}
    assert duplicates == ["x", "a", "a"]  # inner objects are decoded first; one entry per repeat


def test_nesting_and_huge_integers_are_refused_with_a_reason(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 70 + "]" * 70)
    with pytest.raises(JsonFileError, match="nested deeper than 64"):
        read_json_file(deep)
    big = tmp_path / "big.json"
    big.write_text('{"a": [1, ' + "9" * 400 + "]}")
    with pytest.raises(JsonFileError, match="an integer of 400 digits at a\\[1\\]"):
        read_json_file(big)
