"""The build pass on its own: tensor code grouped into regions, decisions kept in the host with their
class (value: on a bool a region computes; shape: from array shapes, no region call)."""
from pass_helpers import assert_host, program_after


def test_a_value_decision_reads_a_number_the_region_before_it_computes():
    assert_host("""
        def forward(self, x):
            h = self.lin(x)
            if self.gate(h).item() > 0.5:
                h = h.relu()
            return h
    """, """
        def forward(x):
            regions.h_L16()
            if cond_L17.item() > 0.5:  # decision L17: value
                regions.h_L18()
            return h


        def h_L16():  # forward L16-17
            h = self.lin(x)
            cond_L17 = self.gate(h)


        def h_L18():  # forward L18
            h = h.relu()
    """, after="build")


def test_a_shape_decision_stays_in_the_host_without_a_region_call():
    assert_host("""
        def forward(self, x):
            n = x.shape[0]
            if n > 1:
                x = self.lin(x)
            return x, n
    """, """
        def forward(x):
            n = x.shape[0]
            if n > 1:  # decision L17: shape
                regions.lin_L18()
            return x, n


        def lin_L18():  # forward L18
            x = self.lin(x)
    """, after="build")


def test_a_while_test_is_computed_before_the_loop_and_at_the_end_of_each_iteration():
    text = program_after("build", """
        def forward(self, x):
            while x.sum() > 0:
                x = self.lin(x) - 1
            return x
    """)
    assert "while cond_L16:  # loop L16" in text
    assert text.count("cond_L16 = x.sum() > 0") == 2  # its own region before the loop, the body's last region
