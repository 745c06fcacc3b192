"""Emit `host.py`: the original forward with tensor math replaced by region calls."""
from __future__ import annotations

import libcst as cst

from rewrite.cfg import HostStmt, If, Loop, Program, RegionCall, code, host_nodes
from rewrite.kinds import DecisionClass, LoopKind
from .fused import FusedBlock

from .comments import comment_lines, origin_comment, region_comment
from .reroll import Rename, reroll
from .speculation import Speculation

__all__ = ["host_source"]


def _targets(names: list[str]) -> cst.BaseAssignTargetExpression:
    if len(names) == 1:
        return cst.Name(names[0])
    return cst.Tuple([cst.Element(cst.Name(n)) for n in names], lpar=[], rpar=[])


def _negated(test: cst.BaseExpression) -> cst.UnaryOperation:
    """`not (test)`: parenthesised where `not` would bind tighter than the test (`not a and b`)."""
    if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.NamedExpr, cst.Lambda)) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.UnaryOperation(cst.Not(), test)


class _HostEmitter:
    """One emitter per host-tree node kind.

    With `instrument`, every decision goes through `regions.decide(id, class,
    value)`: exploration records paths and forces arms through it. `observe`
    names, per decision, values exploration sees at its test: they are passed
    as `lambda: (a, b)` (a name not yet bound on some path is then no error).
    """

    def __init__(self, instrument: bool = False, observe: dict[str, list[str]] | None = None):
        self.instrument = instrument
        self.observe = observe or {}

    def block(self, nodes: list) -> list[cst.BaseStatement]:
        out = [stmt for node in nodes for stmt in getattr(self, f"emit_{type(node).__name__}")(node)]
        return out or [cst.SimpleStatementLine([cst.Pass()])]

    def emit_RegionCall(self, node: RegionCall) -> list[cst.BaseStatement]:
        region = node.region
        call = cst.Call(cst.Attribute(cst.Name("regions"), cst.Name(region.name)),
                        [cst.Arg(cst.Name(n)) for n in region.inputs])
        line = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(_targets(region.outputs))], call)])
        return [line.with_changes(leading_lines=comment_lines(*region_comment(region.stmts)))]

    def emit_HostStmt(self, node: HostStmt) -> list[cst.BaseStatement]:
        return [cst.SimpleStatementLine([node.node], leading_lines=comment_lines(origin_comment(node.origin)))]

    def emit_If(self, node: If) -> list[cst.BaseStatement]:
        orelse = None
        header = cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(
            f"# decision {node.decision}: {node.dclass}-determined ({_where(node.origin, node.test)})"))
        test, body, orelse_nodes = node.test, node.body, node.orelse
        if not body and orelse_nodes and not self.instrument:  # `if c: pass else: ...` reads as `if not c:`
            test, body, orelse_nodes = _negated(test), orelse_nodes, []
        if self.instrument:
            test = self._decide(node.decision, node.dclass, test, self.observe.get(node.decision, ()))
        if len(orelse_nodes) == 1 and isinstance(orelse_nodes[0], If):
            orelse = self.emit_If(orelse_nodes[0])[0]  # `elif`
        elif orelse_nodes:
            orelse = cst.Else(cst.IndentedBlock(self.block(orelse_nodes)))
        return [cst.If(test, cst.IndentedBlock(self.block(body), header=header), orelse)]


    def emit_Loop(self, node: Loop) -> list[cst.BaseStatement]:
        header = cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(
            f"# loop {node.decision}: execution-determined "
            f"({_where(node.origin, node.test if node.kind == 'while' else node.iter)})"))
        body = cst.IndentedBlock(self.block(node.body), header=header)
        if node.kind == LoopKind.WHILE:
            test = node.test
            if self.instrument:
                test = self._decide(node.decision, DecisionClass.EXECUTION, test)
            return [cst.While(test, body)]
        iterable = node.iter
        if self.instrument:
            iterable = cst.Call(cst.Attribute(cst.Name("regions"), cst.Name("iterate")),
                                [cst.Arg(cst.SimpleString(repr(node.decision))), cst.Arg(iterable)])
        return [cst.For(node.target, iterable, body)]

    def emit_FusedBlock(self, node: FusedBlock) -> list[cst.BaseStatement]:
        """One region call runs the block's decisions and loops; the code it replaces follows as comments."""
        outline = [line for line in cst.Module(_HostEmitter().block(node.nodes)).code.splitlines()
                   if line.strip() and not line.lstrip().startswith("#")]
        comments = [f"# {node.origin.func} {node.origin.lines}, run as one region (decisions and loops in its graph):"]
        comments += [f"#   {line}" for line in outline if not _is_hoisted(line, node)]
        call = cst.Call(cst.Attribute(cst.Name("regions"), cst.Name(node.region)),
                        [cst.Arg(cst.Name(a)) for a in node.args])
        lines = [cst.SimpleStatementLine([h.node]) for h in node.hoisted]
        lines.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(_targets(node.outputs))], call)]
                                             if node.outputs else [cst.Expr(call)]))
        for lst, items in node.extends:
            lines.append(cst.SimpleStatementLine([cst.Expr(cst.Call(
                cst.Attribute(cst.Name(lst), cst.Name("extend")), [cst.Arg(cst.Name(items))]))]))
        if node.returns is not None:
            value = _targets(node.outputs) if node.returns else cst.Name(node.outputs[0])
            lines.append(cst.SimpleStatementLine([cst.Return(value)]))
        lines[0] = lines[0].with_changes(leading_lines=comment_lines(*comments))
        return lines

    def emit_Speculation(self, node: Speculation) -> list[cst.BaseStatement]:
        """Call the path's region; return its answer only where every decision, tested here on the values it
        read there, takes the path's arm."""
        share = f"{node.hits} of {node.samples} sample inputs ({100 * node.hits / node.samples:.0f}%)"
        comments = [f"# Speculation (--speculate): {share} took one path: {node.path()}.",
                    f"# Region {node.region} runs that path as one graph and returns what its decisions read;",
                    "# its answer stands only where each decision, tested as below, takes the same arm.",
                    "# Otherwise the program below runs from the start (the speculative work is wasted)."]
        call = cst.Call(cst.Attribute(cst.Name("regions"), cst.Name(node.region)),
                        [cst.Arg(cst.Name(a)) for a in node.args])
        tests = []
        for guard in node.guards:
            test = guard.decision.test.visit(Rename(guard.renames, {}))
            tests.append(test if guard.taken else _negated(test))
        chained = _operand(tests[0], left=True)
        for test in tests[1:]:  # in path order: a test runs only where the decisions before it agreed
            chained = cst.BooleanOperation(chained, cst.And(), _operand(test, left=False))
        returned = cst.SimpleStatementLine([cst.Return(cst.Name(node.result))])
        called = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(_targets(node.outputs))], call)])
        failed = cst.ExceptHandler(cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])], header=_comment(
            "# failed off the path (say, an index only the path keeps in range)")), type=cst.Name("Exception"))
        return [cst.Try(cst.IndentedBlock([called]), [failed],
                        orelse=cst.Else(cst.IndentedBlock([cst.If(chained, cst.IndentedBlock([returned]))])),
                        leading_lines=comment_lines(*comments))]

    @staticmethod
    def _decide(decision: str, dclass: DecisionClass, test, observe=()) -> cst.Call:
        args = [cst.Arg(cst.SimpleString(repr(decision))), cst.Arg(cst.SimpleString(repr(dclass.value))), cst.Arg(test)]
        if observe:
            values = cst.Tuple([cst.Element(cst.Name(n)) for n in observe])
            args.append(cst.Arg(cst.Lambda(cst.Parameters(), values)))
        return cst.Call(cst.Attribute(cst.Name("regions"), cst.Name("decide")), args)


def _comment(text: str) -> cst.TrailingWhitespace:
    return cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(text))


def _operand(test: cst.BaseExpression, left: bool) -> cst.BaseExpression:
    """`test` as an operand of `and`: parenthesised where it would bind looser (`a or b`, `a if c else b`)."""
    loose = isinstance(test, (cst.IfExp, cst.NamedExpr, cst.Lambda)) \
        or isinstance(test, cst.BooleanOperation) and (not left or isinstance(test.operator, cst.Or))
    if loose and not test.lpar:
        return test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return test


def _where(origin, emitted) -> str:
    """`forward L66`, and how the source wrote the test or iterable where the host's differs (folded
    constants, values computed in a region): `forward L66: range(self.max_len)`."""
    where = f"{origin.func} {origin.lines}"
    text = " ".join(origin.text.split())
    if not text or text == code(emitted):
        return where
    return f"{where}: {text if len(text) <= 48 else text[:45] + '...'}"


def _is_hoisted(line: str, node: FusedBlock) -> bool:
    return any(line.strip() == code(h.node) for h in node.hoisted)


def _uses_numpy(node: cst.CSTNode) -> bool:
    found = []

    class _V(cst.CSTVisitor):
        def visit_Attribute(self, n):
            if isinstance(n.value, cst.Name) and n.value.value == "np":
                found.append(n)

    node.visit(_V())
    return bool(found)


def host_source(program: Program, model_file: str, instrument: bool = False,
                observe: dict[str, list[str]] | None = None) -> str:
    """The text of host.py for `program` (`observe`: see `_HostEmitter`)."""
    params = [cst.Param(cst.Name("regions"))] + [cst.Param(cst.Name(p)) for p in program.params]
    body, tables = _HostEmitter(instrument, observe).block(program.body), []
    if not instrument:  # exploration tells the iterations' decisions apart
        body, tables = reroll(body)
    func = cst.FunctionDef(cst.Name("forward"), cst.Parameters(params), cst.IndentedBlock(body))
    fused = any(isinstance(n, FusedBlock) for n in host_nodes(program.body))
    doc = (f'"""Host program of {program.name}.forward, generated by dycl from {model_file}.\n\n'
           f"Decisions run here in Python; tensor math runs in the compiled regions.\n"
           + ("Where a comment says so, one region runs a stretch of decisions and loops in its graph.\n"
              if fused else "")
           + 'Do not edit: reconvert the model instead.\n"""')
    header = [cst.SimpleStatementLine([cst.Expr(cst.SimpleString(doc))])]
    if _uses_numpy(func):
        header.append(cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name("numpy"), cst.AsName(cst.Name("np")))])],
                                              leading_lines=[cst.EmptyLine()]))
    if tables:
        tables[0] = tables[0].with_changes(leading_lines=[cst.EmptyLine()] + comment_lines(
            "# The regions of unrolled loops, one per iteration, in order."))
    module = cst.Module(header + tables + [func.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])])
    return module.code
