"""The rewrite's first passes on their own: parse (forward's source) and partial_eval (helpers inlined,
static configuration folded, static loops unrolled; what depends on run-time data stays)."""
import pytest
import torch

from pass_helpers import assert_host, model_from, program_after
from rewrite import ConversionError, rewrite_model


def test_parse_reads_forward_as_written():
    assert_host("""
        def forward(self, x):
            return self.lin(x)  # a comment
    """, """
        def forward(self, x):
            return self.lin(x)  # a comment
    """, after="parse")


def test_static_configuration_folds_and_static_loops_unroll():
    assert_host("""
        def forward(self, x):
            if self.use_bias:
                x = self.lin(x)
            for blk in self.blocks:
                x = blk(x)
            for i in range(self.depth):
                x = x + i
            return x
    """, """
        def forward(x):
            x = self.lin(x)
            x = self.blocks[0](x)
            x = self.blocks[1](x)
            x = self.blocks[2](x)
            x = x + 0
            x = x + 1
            return x
    """, after="partial_eval")


def test_helpers_inline_with_their_arguments_bound():
    assert_host("""
        def _step(self, x, scale=2):
            h = self.lin(x)
            return h.relu() * scale

        def forward(self, x):
            return self._step(x) + self._step(x, scale=3)
    """, """
        def forward(x):
            h = self.lin(x)
            step_out = h.relu() * 3
            h = self.lin(x)
            step_out_1 = h.relu() * 2
            return step_out_1 + step_out
    """, after="partial_eval")


def test_a_data_dependent_break_in_a_static_loop_becomes_guards():
    assert_host("""
        def forward(self, x):
            for blk in self.blocks:
                x = blk(x)
                if x.sum() > 0:
                    break
            return x
    """, """
        def forward(x):
            broke_L16 = False
            x = self.blocks[0](x)
            if x.sum() > 0:
                broke_L16 = True
            if not broke_L16:  # guard
                x = self.blocks[1](x)
                if x.sum() > 0:
                    broke_L16 = True
            if not broke_L16:  # guard
                x = self.blocks[2](x)
                if x.sum() > 0:
                    broke_L16 = True
            return x
    """, after="partial_eval")


def test_a_data_dependent_while_stays_a_loop():
    text = program_after("partial_eval", """
        def forward(self, x):
            while x.sum() > 0:
                x = self.lin(x) - 1
            return x
    """)
    assert "while x.sum() > 0:" in text and "x = self.lin(x) - 1" in text


def test_a_module_chosen_at_run_time_becomes_a_decision_per_module():
    text = program_after("partial_eval", """
        def forward(self, x):
            k = int(x.sum().item()) % 3
            return self.blocks[k](x)
    """)
    for i in range(3):
        assert f"self.blocks[{i}](x)" in text
    assert "self.blocks[k]" not in text and "if " in text


def test_partial_eval_reports_what_a_package_cannot_do():
    model = model_from("""
        def forward(self, x):
            global STATE
            return self.lin(x)
    """)
    with pytest.raises(ConversionError) as err:
        rewrite_model(model, (torch.randn(2, 4),))
    assert [d.kind for d in err.value.diagnostics] == ["global-state"]
