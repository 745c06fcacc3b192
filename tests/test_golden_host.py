"""Golden test: the generated host.py for a small gated network, byte for byte.

Regenerate after an intended change with DYCL_UPDATE_GOLDEN=1 and review the diff.
"""
import os


from conftest import MODELS, ROOT
from dycl.modelfile import load_model_file
from hostgen import host_source
from rewrite import rewrite_model

GOLDEN = os.path.join(ROOT, "tests", "golden", "golden_gated_host.py")
GOLDEN_FUSED = os.path.join(ROOT, "tests", "golden", "golden_gated_fused_host.py")


def test_host_matches_golden():
    spec = load_model_file(os.path.join(MODELS, "golden_gated.py"))
    program = rewrite_model(spec.model, spec.inputs)
    text = host_source(program, "golden_gated.py")
    if os.environ.get("DYCL_UPDATE_GOLDEN"):
        with open(GOLDEN, "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(GOLDEN, encoding="utf-8") as fh:
        assert text == fh.read()


def test_fused_host_matches_golden(converted):
    """The package's host.py once onnxruntime runs the decisions: one call, the replaced code as comments."""
    result = converted(os.path.join(MODELS, "golden_gated.py"), check=20)
    with open(os.path.join(result.out, "host.py"), encoding="utf-8") as fh:
        text = fh.read()
    if os.environ.get("DYCL_UPDATE_GOLDEN"):
        with open(GOLDEN_FUSED, "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(GOLDEN_FUSED, encoding="utf-8") as fh:
        assert text == fh.read()


def test_conversion_is_deterministic(tmp_path):
    from dycl.convert import ConvertOptions, convert

    path = os.path.join(MODELS, "golden_gated.py")
    files = []
    for k in range(2):
        out = tmp_path / f"pkg{k}"
        opts = ConvertOptions(path, str(out), check=5)
        opts.fuse = "all"  # "measured" depends on timings
        convert(opts)
        files.append({name: (out / name).read_bytes() for name in ("host.py", "manifest.json")})
    assert files[0] == files[1]


def test_host_is_the_original_control_flow():
    spec = load_model_file(os.path.join(MODELS, "golden_gated.py"))
    program = rewrite_model(spec.model, spec.inputs)
    # Three gates and three exits survive; the ModuleDict `in` tests and `self.down is not None` fold away.
    assert [d.dclass for d in program.decisions] == ["value"] * 6
    assert program.static_decisions == 6
    text = host_source(program, "golden_gated.py")
    import io
    import tokenize

    code = tokenize.untokenize((t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)
                               if t.type != tokenize.COMMENT)
    assert "self" not in code and "torch" not in code
    assert "(forward L41: x.abs().sum() > self.exit_threshold)" in text  # how the source wrote the folded test
    assert text.count("if g.item() > 0.5:") == 3
    assert "return out_L43, 3" in text
