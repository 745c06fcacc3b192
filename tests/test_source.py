"""rewrite.source: function sources are parsed from what the file holds now."""
import importlib.util
import os

import libcst as cst

from rewrite.source import function_source


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_file_rewritten_within_one_mtime_tick_is_parsed_again(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f(x):\n    return x + 1\n")
    first = function_source(_load(path, "m_first").f)
    stamp = os.stat(path).st_mtime_ns
    path.write_text("def f(x):\n    return x * 2\n")
    os.utime(path, ns=(stamp, stamp))  # the same mtime, as a fast rewrite may leave it
    second = function_source(_load(path, "m_second").f)
    code = cst.Module([]).code_for_node
    assert "x + 1" in code(first.node)
    assert "x * 2" in code(second.node)
