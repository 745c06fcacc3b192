"""Pictures of a rewritten program: a terminal tree and a Graphviz DOT graph.

The DOT graph is the heterogeneous control-flow graph: compiled regions are
boxes, host decisions diamonds, host loops ellipses, host statements plain
text, and edges follow execution (true/false arms, loop back edges).
"""
from __future__ import annotations

import html

from rich.tree import Tree

from hostgen.fused import FusedBlock
from hostgen.speculation import Speculation
from rewrite.cfg import HostStmt, If, Loop, Program, RegionCall, code
from rewrite.kinds import LoopKind


__all__ = ["program_tree", "program_dot", "tree_text"]


def _region_label(region) -> str:
    ins = ", ".join(region.inputs) or "–"
    outs = ", ".join(region.outputs) or "–"
    return f"region [bold]{region.name}[/] ({region.origin.func} {region.origin.lines}): {ins} → {outs}"


def _add(tree: Tree, nodes: list) -> None:
    for node in nodes:
        if isinstance(node, RegionCall):
            tree.add(_region_label(node.region))
        elif isinstance(node, HostStmt):
            tree.add(f"[dim]host[/] {html.escape(code(node.node), quote=False)}")
        elif isinstance(node, If):
            branch = tree.add(f"[yellow]if[/] {code(node.test)}  [dim](decision {node.decision}, "
                              f"{node.dclass}-determined, {node.origin.func} {node.origin.lines})[/]")
            _add(branch.add("[green]then[/]"), node.body)
            if node.orelse:
                _add(branch.add("[red]else[/]"), node.orelse)
        elif isinstance(node, Loop):
            head = code(node.test) if node.kind == LoopKind.WHILE else f"{code(node.target)} in {code(node.iter)}"
            _add(tree.add(f"[magenta]{node.kind}[/] {head}  [dim](loop {node.decision}, execution-determined, "
                          f"{node.origin.func} {node.origin.lines})[/]"), node.body)
        elif isinstance(node, FusedBlock):
            ins, outs = ", ".join(node.args) or "–", ", ".join(node.outputs) or "–"
            _add(tree.add(f"[cyan]one region[/] [bold]{node.region}[/] ({node.origin.func} {node.origin.lines}): "
                          f"{ins} → {outs}  [dim](runs, inside its graph:)[/]"), node.nodes)
        elif isinstance(node, Speculation):
            tree.add(f"[cyan]speculation[/] [bold]{node.region}[/]: {', '.join(node.args) or '–'} → "
                     f"{', '.join(node.outputs)}; returns {node.result} where {node.path()}  [dim]({node.hits} of "
                     f"{node.samples} samples took that path; else the program below runs)[/]")


def program_tree(program: Program, title: str) -> Tree:
    tree = Tree(f"[bold]{program.name}.forward[/]({', '.join(program.params)})  [dim]{title}[/]")
    _add(tree, program.body)
    return tree


def tree_text(program: Program, title: str, width: int = 100) -> str:
    """The tree as plain text (for report.md)."""
    from rich.console import Console

    console = Console(width=width, record=True, color_system=None, file=_Null())
    console.print(program_tree(program, title))
    return console.export_text(styles=False)


class _Null:
    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        pass


class _Dot:
    def __init__(self):
        self.lines: list[str] = []
        self.count = 0

    def node(self, label: str, **attrs) -> str:
        self.count += 1
        name = f"n{self.count}"
        extra = "".join(f', {k}="{v}"' for k, v in attrs.items())
        self.lines.append(f'  {name} [label="{_escape(label)}"{extra}];')
        return name

    def edge(self, a: str, b: str, label: str = "", **attrs) -> None:
        parts = [f'label="{label}"'] if label else []
        parts += [f'{k}="{v}"' for k, v in attrs.items()]
        self.lines.append(f"  {a} -> {b}" + (f" [{', '.join(parts)}]" if parts else "") + ";")

    def chain(self, nodes: list, entry: list[tuple[str, str]], loop: tuple[str, str] | None):
        """Emit `nodes`; `entry` are (node, edge label) pairs flowing in. Returns the open exits."""
        exits = entry
        for node in nodes:
            if isinstance(node, RegionCall):
                r = node.region
                name = self.node(f"{r.name}\n{r.origin.func} {r.origin.lines}\n"
                                 f"{', '.join(r.inputs) or '–'} → {', '.join(r.outputs) or '–'}",
                                 shape="box", style="filled", fillcolor="#cfe2ff")
                self._connect(exits, name)
                exits = [(name, "")]
            elif isinstance(node, HostStmt):
                text = code(node.node)
                kind = type(node.node).__name__
                name = self.node(text, shape="plaintext")
                self._connect(exits, name)
                if kind == "Return":
                    self.edge(name, "exit")
                    exits = []
                elif kind == "Break" and loop:
                    loop[1].append((name, ""))
                    exits = []
                elif kind == "Continue" and loop:
                    self.edge(name, loop[0], style="dashed")
                    exits = []
                else:
                    exits = [(name, "")]
            elif isinstance(node, If):
                name = self.node(f"{code(node.test)}\n{node.decision} ({node.dclass})", shape="diamond",
                                 style="filled", fillcolor="#fff3cd")
                self._connect(exits, name)
                exits = self.chain(node.body, [(name, "true")], loop)
                exits += self.chain(node.orelse, [(name, "false")], loop) if node.orelse else [(name, "false")]
            elif isinstance(node, Loop):
                head = code(node.test) if node.kind == LoopKind.WHILE else f"for {code(node.target)} in {code(node.iter)}"
                name = self.node(f"{head}\n{node.decision} (execution)", shape="ellipse", style="filled",
                                 fillcolor="#e2d9f3")
                self._connect(exits, name)
                breaks: list = []
                body_exits = self.chain(node.body, [(name, "iterate")], (name, breaks))
                for src, label in body_exits:
                    self.edge(src, name, label, style="dashed")
                exits = [(name, "done")] + breaks
            elif isinstance(node, Speculation):  # the path's graph: returns where its decisions agree
                name = self.node(f"{node.region} (speculation)\n{node.path()}", shape="box", style="filled,dashed",
                                 fillcolor="#cfe2ff")
                self._connect(exits, name)
                self.edge(name, "exit", "every decision agrees")
                exits = [(name, "else")]
            elif isinstance(node, FusedBlock):  # one region: its decisions and loops drawn inside a cluster
                self.count += 1
                self.lines.append(f"  subgraph cluster_{self.count} {{")
                self.lines.append(f'  label="{_escape(node.region)}: one region"; style="rounded,filled"; '
                                  f'fillcolor="#eef6ee";')
                exits = self.chain(node.nodes, exits, loop)
                self.lines.append("  }")
        return exits

    def _connect(self, exits, name: str) -> None:
        for src, label in exits:
            self.edge(src, name, label)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def program_dot(program: Program) -> str:
    """The heterogeneous control-flow graph in DOT."""
    dot = _Dot()
    entry = dot.node(f"{program.name}.forward({', '.join(program.params)})", shape="oval")
    exits = dot.chain(program.body, [(entry, "")], None)
    lines = ["digraph dycl {", '  rankdir=TB; node [fontname="Helvetica", fontsize=10]; '
             'edge [fontname="Helvetica", fontsize=9];', '  exit [label="return", shape="oval"];']
    lines += dot.lines
    lines += [f'  {src} -> exit{f" [label={chr(34)}{label}{chr(34)}]" if label else ""};' for src, label in exits]
    lines.append("}")
    return "\n".join(lines) + "\n"
