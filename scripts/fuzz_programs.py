"""Random dynamic programs for the differential fuzzer (`scripts/fuzz.py`), drawn by hypothesis.

A program is a small tree: tensor assignments, a host counter, a flag, a
float read by `.item()`, a list that grows by `append`, a tensor that grows
by `torch.cat`, nested `if`/`elif`/`else` on `.item()`, `any`/`all`, shape,
host and static conditions, data-dependent `for`/`while` loops with `break`,
`continue` and early `return`, static loops over a `ModuleList` and over
`range(self.depth)`, and calls to helper methods (which branch and return
early themselves). Every program returns several outputs of mixed kinds.
`render` writes it as a model file (`get_model`, `get_inputs`,
`sample_inputs`, `DYNAMIC`, and `edge_inputs`: NaN, Inf, zero-size and
extreme shapes). Weights are seeded, so a file always builds the same model.

Tensors are tiny (`D` features, a few rows) and programs have few regions,
so that thousands convert in an hour even with TVM. Everything is drawn
from hypothesis strategies, so a failing program shrinks to a minimal one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from hypothesis import strategies as st

__all__ = ["Program", "programs", "render", "D", "HEAD"]

D = 4  # features of every [batch, D] tensor
HEAD = 3  # outputs of self.head
N_LAYERS = 3  # len(self.layers)
DEPTH = 2  # self.depth, the bound of the static range loop

# -- the tree ------------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """A [batch, D] tensor expression over variables `args` (op names below)."""
    op: str
    args: tuple[str, ...]
    const: float = 0.0
    index: int = 0


@dataclass(frozen=True)
class Cond:
    """A condition: `op` names the kind; `parts` for not/and/or."""
    op: str
    var: str = "h"
    cmp: str = ">"
    const: float = 0.0
    parts: tuple["Cond", ...] = ()


@dataclass(frozen=True)
class Stmt:
    """A statement; `body`/`orelse`/`arms` for compound ones, `jump` ends a block."""
    op: str
    target: str = "h"
    expr: Expr | None = None
    cond: Cond | None = None
    arms: tuple[tuple[Cond, "Block"], ...] = ()
    orelse: "Block | None" = None
    body: "Block | None" = None
    limit: int = 0


@dataclass(frozen=True)
class Block:
    stmts: tuple[Stmt, ...]
    jump: str | None = None  # "break", "continue", "return" or None


@dataclass(frozen=True)
class Helper:
    """`def step<k>(self, v)`: `pre` assignments, an optional early `return early` under `cond`, `post`."""
    pre: tuple[Expr, ...]
    cond: Cond | None
    early: Expr | None
    post: tuple[Expr, ...]


@dataclass(frozen=True)
class Program:
    body: Block
    outputs: tuple[str, ...]
    container: str  # "tuple", "single", "dict", "list"
    helpers: tuple[Helper, ...]
    inputs: int  # 1: forward(x); 2: forward(x, y)
    batch: int
    dynamic: bool
    use_extra: bool  # a static flag: `if self.use_extra and ...` folds away
    seed: int
    edge: tuple[str, ...] = field(default=())  # kinds of edge inputs


# -- strategies ----------------------------------------------------------------

_UNARY = ("relu", "tanh", "sigmoid", "neg", "clamp", "softmax", "center", "abs")
_BINARY = ("add", "mul", "maximum", "where", "sub")
_CONSTS = st.sampled_from((0.0, 0.5, -0.5, 1.0, 2.0))


class _Scope:
    """What a block may use: tensor variables, loop variables, whether `break`/`continue` are allowed."""

    def __init__(self, tensors=("h", "g", "x"), loop=False, layer_var=None, index_var=None, helpers=0, depth=0,
                 host=True, avoid=frozenset()):
        self.avoid = avoid  # names of constructs not to draw (see `programs`)
        self.tensors, self.loop, self.layer_var, self.index_var = tensors, loop, layer_var, index_var
        self.helpers, self.depth = helpers, depth
        self.host = host  # forward's host variables (n, flag, score, acc) are in scope

    def inner(self, **kw) -> "_Scope":
        s = _Scope(self.tensors, self.loop, self.layer_var, self.index_var, self.helpers, self.depth + 1, self.host,
                   self.avoid)
        for k, v in kw.items():
            setattr(s, k, v)
        return s


@st.composite
def _expr(draw, scope: _Scope, helper_calls: bool = True) -> Expr:
    var = st.sampled_from(scope.tensors)
    ops = ["layer", "unary", "affine", "binary"]
    if scope.layer_var:
        ops.append("loop_layer")
    if scope.index_var:
        ops.append("loop_index")
    if helper_calls and scope.helpers:
        ops.append("helper")
    op = draw(_pick(scope, ops))
    a = draw(var)
    if op == "layer":
        return Expr("layer", (a,), index=draw(st.integers(0, N_LAYERS - 1)))
    if op == "unary":
        return Expr(draw(_pick(scope, _UNARY)), (a,))
    if op == "affine":
        return Expr("affine", (a,), const=draw(_CONSTS), index=draw(st.sampled_from((1, 2, -1))))
    if op == "binary":
        return Expr(draw(_pick(scope, _BINARY)), (a, draw(var)))
    if op == "helper":
        return Expr("helper", (a,), index=draw(st.integers(0, scope.helpers - 1)))
    return Expr(op, (a,))


@st.composite
def _cond(draw, scope: _Scope, depth: int = 0) -> Cond:
    kinds = ["item", "tensor", "any", "all", "shape", "static"] + (["count", "flag", "score"] if scope.host else [])
    if depth < 1:
        kinds += ["not", "and", "or"]
    op = draw(_pick(scope, kinds))
    var = draw(st.sampled_from(scope.tensors))
    cmp = draw(st.sampled_from((">", "<", ">=")))
    if op in ("item", "tensor"):
        return Cond(op, var, cmp, draw(_CONSTS), parts=(Cond(draw(st.sampled_from(("sum", "mean")))),))
    if op in ("any", "all"):
        return Cond(op, var, cmp, draw(_CONSTS))
    if op == "shape":
        var = draw(st.sampled_from(scope.tensors + (("acc",) if scope.host else ())))
        return Cond(op, var, draw(st.sampled_from((">", "<", "=="))), float(draw(st.integers(0, 4))))
    if op == "count":
        return Cond(op, "n", draw(st.sampled_from((">", "<", "=="))), float(draw(st.integers(0, 3))))
    if op == "score":
        return Cond(op, "score", cmp, draw(_CONSTS))
    if op in ("flag", "static"):
        return Cond(op)
    if op == "not":
        return Cond(op, parts=(draw(_cond(scope, depth + 1)),))
    return Cond(op, parts=(draw(_cond(scope, depth + 1)), draw(_cond(scope, depth + 1))))


@st.composite
def _block(draw, scope: _Scope, min_size: int = 1, max_size: int = 3) -> Block:
    stmts = tuple(draw(st.lists(_stmt(scope), min_size=min_size, max_size=max_size)))
    jumps = [None, "return"] + (["break", "continue"] if scope.loop else [])
    return Block(stmts, draw(st.sampled_from(jumps)) if scope.depth > 0 else None)


@st.composite
def _stmt(draw, scope: _Scope) -> Stmt:
    simple = ["assign", "assign", "count", "flag", "score", "append", "grow"]
    compound = ["if", "if", "for_layers", "for_depth", "for_range", "while"] if scope.depth < 2 else []
    op = draw(_pick(scope, simple + compound))
    if op == "assign":
        return Stmt(op, draw(st.sampled_from(("h", "g"))), expr=draw(_expr(scope)))
    if op == "flag":
        return Stmt(op, expr=Expr(draw(st.sampled_from(("true", "false", "not"))), ()))
    if op in ("score", "append", "grow"):
        return Stmt(op, draw(st.sampled_from(("h", "g"))),
                    cond=Cond(draw(st.sampled_from(("sum", "mean")))) if op == "score" else None)
    if op == "count":
        return Stmt(op)
    if op == "if":
        arms = tuple(draw(st.lists(st.tuples(_cond(scope), _block(scope.inner())), min_size=1, max_size=3)))
        orelse = draw(st.one_of(st.none(), _block(scope.inner())))
        return Stmt(op, arms=arms, orelse=orelse)
    if op == "for_layers":
        return Stmt(op, body=draw(_block(scope.inner(loop=True, layer_var=f"layer{scope.depth}"))))
    if op == "for_depth":
        return Stmt(op, body=draw(_block(scope.inner(loop=True, index_var=f"i{scope.depth}"))))
    limit = draw(st.integers(1, 4))
    cond = draw(st.one_of(st.none(), _cond(scope))) if op == "while" else None
    return Stmt(op, cond=cond, body=draw(_block(scope.inner(loop=True), max_size=3)), limit=limit)


@st.composite
def _helper(draw, avoid: frozenset) -> Helper:
    scope = _Scope(tensors=("v",), host=False, avoid=avoid)
    pre = tuple(draw(st.lists(_expr(scope, helper_calls=False), min_size=1, max_size=2)))
    early = draw(st.booleans())
    return Helper(pre, draw(_cond(scope, depth=1)) if early else None,
                  draw(_expr(scope, helper_calls=False)) if early else None,
                  tuple(draw(st.lists(_expr(scope, helper_calls=False), max_size=1))))


_EDGES = ("nan", "inf", "ninf", "allnan", "large", "empty", "one", "wide")  # edge inputs (see edge_inputs())
_RESIZING = ("empty", "one", "wide")  # those that change the batch size: only where it is dynamic
_OUTPUTS = ("head", "h", "g", "n", "flag", "score", "feats", "stack", "acc", "argmax")


@st.composite
def programs(draw, avoid: frozenset = frozenset()) -> Program:
    """A random program; small programs come first and failures shrink towards them.

    `avoid` names constructs not to draw (expression ops, condition kinds,
    statement kinds, outputs), to look past a known bug.
    """
    helpers = tuple(draw(st.lists(_helper(avoid), max_size=2)))
    inputs = draw(st.integers(1, 2))
    tensors = ("h", "g", "x") + (("y",) if inputs == 2 else ())
    body = draw(_block(_Scope(tensors=tensors, helpers=len(helpers), avoid=avoid), min_size=1, max_size=5))
    outputs = tuple(draw(st.lists(st.sampled_from([o for o in _OUTPUTS if o not in avoid]), min_size=1, max_size=4,
                                  unique=True)))
    container = draw(st.sampled_from(("tuple", "dict", "list") + (("single",) if len(outputs) == 1 else ())))
    dynamic = draw(st.booleans())
    return Program(body, outputs, container, helpers, inputs, draw(st.integers(1, 3)), dynamic,
                   draw(st.booleans()), draw(st.integers(0, 2**16)),
                   tuple(e for e in _EDGES if e not in avoid and (dynamic or e not in _RESIZING)))


def _pick(scope: _Scope, names) -> st.SearchStrategy:
    return st.sampled_from([n for n in names if n not in scope.avoid])


# -- rendering -----------------------------------------------------------------


class _Writer:
    """Lines with an indent."""

    def __init__(self):
        self.lines: list[str] = []
        self.level = 0

    def line(self, text: str = "") -> None:
        self.lines.append("    " * self.level + text if text else "")

    def indented(self) -> "_Indent":
        return _Indent(self)


class _Indent:
    def __init__(self, writer: _Writer):
        self.writer = writer

    def __enter__(self):
        self.writer.level += 1

    def __exit__(self, *exc):
        self.writer.level -= 1


# forward's variables besides `h`, declared only where the program uses them
_INITS = (("g", "torch.tanh(x)"), ("n", "0"), ("flag", "False"), ("score", "0.0"), ("feats", "[h]"),
          ("acc", "x[:, :1]"))


def _num(c: float) -> str:
    return repr(float(c))


def _expr_text(e: Expr, layer_var: str = "", index_var: str = "") -> str:
    a = e.args
    return {
        "layer": lambda: f"self.layers[{e.index}]({a[0]})",
        "loop_layer": lambda: f"{layer_var}({a[0]})",
        "loop_index": lambda: f"{a[0]} + {index_var}",
        "relu": lambda: f"torch.relu({a[0]})",
        "tanh": lambda: f"torch.tanh({a[0]})",
        "sigmoid": lambda: f"torch.sigmoid({a[0]})",
        "neg": lambda: f"-{a[0]}",
        "abs": lambda: f"{a[0]}.abs()",
        "clamp": lambda: f"{a[0]}.clamp(-1.0, 1.0)",
        # 0.9 of it: a softmax row sums to 1 up to rounding (and n rows to n), which a test on that sum against
        # 1.0 or 2.0 decides by rounding alone, differently in torch and in a compiled graph
        "softmax": lambda: f"torch.softmax({a[0]}, dim=1) * 0.9",
        # half the row mean: a fully centred row sums to 0 up to rounding, and a test on that sum could go
        # either way in torch and in a compiled graph
        "center": lambda: f"{a[0]} - 0.5 * {a[0]}.mean(dim=1, keepdim=True)",
        "affine": lambda: f"{a[0]} * {_num(e.index * 0.5)} + {_num(e.const)}",
        "add": lambda: f"{a[0]} + {a[1]}",
        "sub": lambda: f"{a[0]} - {a[1]}",
        "mul": lambda: f"{a[0]} * {a[1]}",
        "maximum": lambda: f"torch.maximum({a[0]}, {a[1]})",
        "where": lambda: f"torch.where({a[0]} > 0, {a[0]}, {a[1]})",
        "helper": lambda: f"self.step{e.index}({a[0]})",
    }[e.op]()


class _Renderer:
    def __init__(self, program: Program):
        self.p = program
        self.w = _Writer()
        self.loops = 0
        self.layer_vars: list[str] = []
        self.index_vars: list[str] = []

    def expr(self, e: Expr) -> str:
        return _expr_text(e, (self.layer_vars or [""])[-1], (self.index_vars or [""])[-1])

    def cond(self, c: Cond) -> str:
        v = c.var
        if c.op == "item":
            return f"{v}.{c.parts[0].op}().item() {c.cmp} {_num(c.const)}"
        if c.op == "tensor":
            return f"{v}.{c.parts[0].op}() {c.cmp} {_num(c.const)}"
        if c.op == "any":
            return f"torch.any({v} {c.cmp} {_num(c.const)})"
        if c.op == "all":
            return f"({v} {c.cmp} {_num(c.const)}).all()"
        if c.op == "shape":
            return f"{v}.shape[{1 if c.var == 'acc' else 0}] {c.cmp} {int(c.const)}"
        if c.op in ("count", "score"):
            return f"{v} {c.cmp} {int(c.const) if c.op == 'count' else _num(c.const)}"
        if c.op == "flag":
            return "flag"
        if c.op == "static":
            return "self.use_extra"
        if c.op == "not":
            return f"not ({self.cond(c.parts[0])})"
        return f"({self.cond(c.parts[0])}) {c.op} ({self.cond(c.parts[1])})"

    def outputs(self) -> str:
        text = {"head": "self.head(h)", "h": "h", "g": "g", "n": "n", "flag": "flag", "score": "score",
                "feats": "feats", "stack": "torch.stack(feats)", "acc": "acc", "argmax": "self.head(h).argmax(-1)"}
        items = [text[o] for o in self.p.outputs]
        if self.p.container == "single":
            return items[0]
        if self.p.container == "dict":
            return "{" + ", ".join(f"{o!r}: {t}" for o, t in zip(self.p.outputs, items)) + "}"
        if self.p.container == "list":
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def block(self, b: Block) -> None:
        with self.w.indented():
            for s in b.stmts:
                self.stmt(s)
            if b.jump == "return":
                self.w.line(f"return {self.outputs()}")
            elif b.jump:
                self.w.line(b.jump)
            if not b.stmts and not b.jump:
                self.w.line("pass")

    def stmt(self, s: Stmt) -> None:
        line = self.w.line
        if s.op == "assign":
            line(f"{s.target} = {self.expr(s.expr)}")
        elif s.op == "count":
            line("n += 1")
        elif s.op == "flag":
            line({"true": "flag = True", "false": "flag = False", "not": "flag = not flag"}[s.expr.op])
        elif s.op == "score":
            line(f"score = {s.target}.{s.cond.op}().item()")
        elif s.op == "append":
            line(f"feats.append({s.target})")
        elif s.op == "grow":
            line(f"acc = torch.cat([acc, {s.target}[:, :1]], dim=1)")
        elif s.op == "if":
            for k, (c, b) in enumerate(s.arms):
                line(f"{'if' if k == 0 else 'elif'} {self.cond(c)}:")
                self.block(b)
            if s.orelse is not None:
                line("else:")
                self.block(s.orelse)
        elif s.op == "for_layers":
            var = f"layer{len(self.layer_vars)}"
            line(f"for {var} in self.layers:")
            self.layer_vars.append(var)
            self.block(s.body)
            self.layer_vars.pop()
        elif s.op == "for_depth":
            var = f"i{len(self.index_vars)}"
            line(f"for {var} in range(self.depth):")
            self.index_vars.append(var)
            self.block(s.body)
            self.index_vars.pop()
        elif s.op == "for_range":
            line(f"for t{self.loops} in range({s.limit}):")
            self.loops += 1
            self.block(s.body)
        else:
            k = f"k{self.loops}"
            self.loops += 1
            line(f"{k} = 0")
            line(f"while {k} < {s.limit}" + (f" and ({self.cond(s.cond)}):" if s.cond else ":"))
            with self.w.indented():
                line(f"{k} += 1")
            self.block(s.body)

    def helper(self, k: int, hp: Helper) -> None:
        line = self.w.line
        line(f"def step{k}(self, v):")
        with self.w.indented():
            for e in hp.pre:
                line(f"v = {_expr_text(e)}")
            if hp.cond is not None:
                line(f"if {self.cond(hp.cond)}:")
                with self.w.indented():
                    line(f"return {_expr_text(hp.early)}")
            for e in hp.post:
                line(f"v = {_expr_text(e)}")
            line("return v")
        line()

    def render(self) -> str:
        p, line = self.p, self.w.line
        params = "x, y" if p.inputs == 2 else "x"
        dynamic = "{" + ", ".join(f"{n!r}: {{0: 'batch'}}" for n in params.split(", ")) + "}" if p.dynamic else "{}"
        for text in ['"""A program generated by scripts/fuzz.py."""', "import torch", "from torch import nn", "",
                     f"DYNAMIC = {dynamic}", f"EDGE = {p.edge!r}", "", "", "class Fuzzed(nn.Module):"]:
            line(text)
        with self.w.indented():
            line("def __init__(self):")
            with self.w.indented():
                for text in ["super().__init__()",
                             f"self.layers = nn.ModuleList([nn.Linear({D}, {D}) for _ in range({N_LAYERS})])",
                             f"self.head = nn.Linear({D}, {HEAD})", f"self.depth = {DEPTH}",
                             f"self.use_extra = {p.use_extra}"]:
                    line(text)
            line()
            for k, hp in enumerate(p.helpers):
                self.helper(k, hp)
            line(f"def forward(self, {params}):")
            start = len(self.w.lines)
            self.block(Block(p.body.stmts, "return"))
            used = set(re.findall(r"\w+", "\n".join(self.w.lines[start:])))
            inits = ["h = self.layers[0](x)" if p.inputs == 1 else "h = self.layers[0](x) + y"]
            inits += [f"{var} = {value}" for var, value in _INITS if var in used]
            self.w.lines[start:start] = ["        " + text for text in inits]
        self._files()
        return "\n".join(self.w.lines) + "\n"

    def _files(self) -> None:
        p = self.p
        n_in = p.inputs
        text = f"""

def get_model():
    torch.manual_seed({p.seed})
    return Fuzzed().eval()


def _rand(gen, rows, scale, shift):
    return tuple(torch.randn(rows, {D}, generator=gen) * scale + shift for _ in range({n_in}))


def get_inputs():
    return _rand(torch.Generator().manual_seed({p.seed}), {p.batch}, 1.0, 0.0)


def sample_inputs(n, seed=0):
    \"\"\"Scales and shifts that send sums, means, any and all both ways{'; batch sizes vary' if p.dynamic else ''}.\"\"\"
    gen = torch.Generator().manual_seed(seed)
    scales, shifts = (0.1, 1.0, 3.0, 10.0), (0.0, -1.0, 1.0, -3.0, 3.0)
    rows = {f"({p.batch}, 1, {p.batch + 2})" if p.dynamic else f"({p.batch},)"}
    return [_rand(gen, rows[k % len(rows)], scales[k % 4], shifts[k % 5]) for k in range(n)]


def edge_inputs():
    \"\"\"NaN, Inf, zero-size and extreme shapes, for the fuzzer's own comparison.\"\"\"
    gen = torch.Generator().manual_seed({p.seed} + 1)
    out = []
    for kind in EDGE:
        rows = {{"empty": 0, "one": 1, "wide": 257}}.get(kind, {p.batch})
        xs = _rand(gen, rows, 1.0, 0.0)
        for t in xs:
            if kind == "nan":
                t[0, 0] = float("nan")
            elif kind == "inf":
                t[0, 1 % {D}] = float("inf")
            elif kind == "ninf":
                t[-1, 0] = float("-inf")
            elif kind == "allnan":
                t.fill_(float("nan"))
            elif kind == "large":
                t.mul_(1e4)
        out.append(xs)
    return out
"""
        self.w.lines.extend(text.rstrip("\n").split("\n"))


def render(program: Program) -> str:
    """The program as a model file."""
    return _Renderer(program).render()
