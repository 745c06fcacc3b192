"""The liveness pass on its own: each region takes the names live into it and returns those live after
it; a region nothing reads is dropped."""
from pass_helpers import assert_host, program_after

SOURCE = """
def forward(self, x):
    h = self.lin(x)
    unused = self.gate(x)
    if h.sum() > 0:
        h = h.relu()
    return h
"""


def test_regions_get_their_live_inputs_and_outputs():
    before = program_after("merge_across_host", SOURCE)
    assert "regions.h_L16()" in before and "def h_L16():" in before  # no signatures before liveness
    assert_host(SOURCE, """
        def forward(x):
            h, cond_L18 = regions.h_L16(x)
            if cond_L18:  # decision L18: value
                h = regions.h_L19(h)
            return h


        def h_L16(x):  # forward L16-18
            h = self.lin(x)
            unused = self.gate(x)
            cond_L18 = h.sum() > 0
            return h, cond_L18


        def h_L19(h):  # forward L19
            h = h.relu()
            return h
    """)


def test_a_region_whose_results_nothing_reads_is_dropped():
    text = program_after("liveness", """
        def forward(self, x):
            h = self.lin(x)
            n = x.shape[0]
            if n > 1:
                g = self.gate(x)
            return h
    """)
    assert "self.gate" not in text and "if n > 1:" in text


def test_a_loop_carries_what_its_next_iteration_reads():
    text = program_after("liveness", """
        def forward(self, x):
            h = self.lin(x)
            while h.sum() > 0:
                h = self.lin(h) - 1
            return h
    """)
    assert "h, cond_L17 = regions.lin_L16(x)" in text and "while cond_L17:" in text
    assert "h, cond_L17 = regions.lin_L18(h)" in text and "def lin_L18(h):" in text


def test_code_after_an_if_whose_arms_both_return_is_dropped():
    # With `x.shape[0] > 1` folded to its `else`, both arms of the value decision return: the region after
    # them never runs, and must not read `feats`, which nothing live binds.
    text = program_after("liveness", """
        def forward(self, x):
            h = self.lin(x)
            feats = [h]
            if h.sum() > 0:
                return h
            elif x.shape[0] > 1:
                h = self.lin(h)
            else:
                return self.gate(h)
            feats.append(h)
            return self.lin(h)
    """, fixed={"L20": False})
    assert "feats.append" not in text and "self.lin(h)" not in text
    assert "out_L23 = regions.gate_L23(h)\n        return out_L23\n\n\ndef lin_L16(x):" in text
