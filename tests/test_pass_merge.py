"""The merge passes on their own: tail_merge (a region after an `if` moves into its arms) and
merge_across_host (regions a host statement separates join when it touches nothing they share)."""
from pass_helpers import assert_host

TAIL = """
def forward(self, x):
    h = self.lin(x)
    if h.sum() > 0:
        h = h.relu()
    return self.gate(h)
"""


def test_before_tail_merge_the_region_after_the_if_is_its_own_call():
    assert_host(TAIL, """
        def forward(x):
            regions.lin_L16()
            if cond_L17:  # decision L17: value
                regions.h_L18()
            regions.gate_L19()
            return out_L19


        def lin_L16():  # forward L16-17
            h = self.lin(x)
            cond_L17 = h.sum() > 0


        def h_L18():  # forward L18
            h = h.relu()


        def gate_L19():  # forward L19
            out_L19 = self.gate(h)
    """, after="build")


def test_tail_merge_copies_the_region_into_each_arm():
    assert_host(TAIL, """
        def forward(x):
            regions.lin_L16()
            if cond_L17:  # decision L17: value
                regions.h_L18()
            else:
                regions.gate_L19_1()
            return out_L19


        def lin_L16():  # forward L16-17
            h = self.lin(x)
            cond_L17 = h.sum() > 0


        def h_L18():  # forward L18-19
            h = h.relu()
            out_L19 = self.gate(h)


        def gate_L19_1():  # forward L19
            out_L19 = self.gate(h)
    """, after="tail_merge")


LOOP = """
def forward(self, x):
    h = self.lin(x)
    steps = 0
    while h.sum() > 0:
        h = h - 1
        steps += 1
        h = self.lin(h)
    return h, steps
"""


def test_merge_across_host_joins_the_regions_around_a_counter():
    assert_host(LOOP, """
        def forward(x):
            regions.lin_L16()
            steps = 0
            while cond_L18:  # loop L18
                regions.h_L19()
                steps += 1
            return h, steps


        def lin_L16():  # forward L16-18
            h = self.lin(x)
            cond_L18 = h.sum() > 0


        def h_L19():  # forward L18-21
            h = h - 1
            h = self.lin(h)
            cond_L18 = h.sum() > 0
    """, after="merge_across_host")


def test_merge_across_host_keeps_regions_apart_when_the_host_reads_between_them():
    assert_host("""
        def forward(self, x):
            h = self.lin(x)
            n = int(h.sum().item())
            h = self.lin(h) * n
            return h
    """, """
        def forward(x):
            regions.lin_L16()
            n = int(tmp_L17.item())
            regions.lin_L18()
            return h


        def lin_L16():  # forward L16-17
            h = self.lin(x)
            tmp_L17 = h.sum()


        def lin_L18():  # forward L18
            h = self.lin(h) * n
    """, after="merge_across_host")
