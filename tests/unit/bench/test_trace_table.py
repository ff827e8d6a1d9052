"""bench/engine/trace_table.py on synthetic CUPTI traces: the step split, each
kernel's busy and idle advance, and the names it prints."""
import importlib.util
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "engine" / "trace_table.py"


def load():
    spec = importlib.util.spec_from_file_location("trace_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tt = load()


def kernel(start, end, name, corr=1, graph=0):
    return {"start": start, "end": end, "corr": corr, "graph": graph, "grid": 1, "block": 1, "cluster": 1,
            "name": name}


def test_short_name_drops_namespaces_and_arguments():
    full = ("void aph::gguf::cuda::(anonymous namespace)::matvec_kernel<3, 1, true, __nv_bfloat16>"
            "(aph::gguf::cuda::MatvecTargets, long, aph::gguf::cuda::MatvecX, int)")
    assert tt.short_name(full) == "matvec_kernel<3, 1, true, __nv_bfloat16>"
    assert tt.short_name("sample_kernel(float const*, int)") == "sample_kernel"
    nested = "void ns::k<ns::Vec<2>, 4>(ns::Params)"
    assert tt.short_name(nested) == "k<Vec<2>, 4>"


def test_advances_split_overlap_gaps_and_tail():
    # b starts while a runs (programmatic dependent launch) and ends 4 later;
    # c starts 2 after b ends; the next step starts 5 after c ends.
    ks = [kernel(100, 110, "a"), kernel(105, 114, "b"), kernel(116, 120, "c")]
    rows, tail = tt.advances(100, 125, ks)
    assert rows == [("a", 10, 0, 10), ("b", 9, 0, 4), ("c", 4, 2, 4)]
    assert tail == 5
    # Busy, idle and tail add up to the period.
    assert sum(r[2] + r[3] for r in rows) + tail == 25


def test_a_kernel_inside_another_advances_nothing():
    rows, tail = tt.advances(0, 30, [kernel(0, 20, "long"), kernel(5, 10, "inside")])
    assert rows[1] == ("inside", 5, 0, 0)
    assert tail == 10


def test_steps_follow_the_most_launched_graph():
    ks = []
    # Graph 7 launched 4 times (correlation ids 10-13), each followed by a
    # kernel outside any graph; graph 9 launched once in between.
    for i in range(4):
        t0 = 1000 * i
        ks += [kernel(t0, t0 + 100, "g1", 10 + i, 7), kernel(t0 + 90, t0 + 200, "g2", 10 + i, 7),
               kernel(t0 + 250, t0 + 300, "sample", 50 + i)]
    ks.append(kernel(1500, 1600, "other", 99, 9))
    ks.sort(key=lambda k: k["start"])
    graph, launches, steps = tt.steps_of(ks, keep=10)
    assert (graph, launches) == (7, 4)
    assert len(steps) == 3  # a step ends where the next launch starts
    lo, hi, members = steps[0]
    assert (lo, hi) == (0, 1000)
    assert [k["name"] for k in members] == ["g1", "g2", "sample"]
    assert [k["name"] for k in steps[1][2]] == ["g1", "g2", "sample", "other"]
    _, _, last = tt.steps_of(ks, keep=1)
    assert len(last) == 1 and last[0][:2] == (2000, 3000)


def test_the_printed_table(tmp_path):
    lines = ["N,0,void ns::(anonymous namespace)::matvec<2>(ns::X)", "N,1,sample_kernel(float const*, int)"]
    for i in range(5):
        t0 = 10_000 * i
        lines += [f"K,{t0},{t0 + 3000},{i},5,1,4,128,1,0", f"K,{t0 + 2000},{t0 + 6000},{i},5,2,4,128,1,0",
                  f"K,{t0 + 7000},{t0 + 8000},{100 + i},0,0,1,256,1,1"]
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    out = subprocess.run([sys.executable, str(SCRIPT), str(trace), "--steps", "3"], capture_output=True, text=True,
                         check=True).stdout
    assert "decode graph 5: 5 launches; the last 3 steps: period median 10.0 us" in out
    # Per step: matvec busy 3 + 3 us, sample 1 us after 1 us idle, 2 us idle after it.
    assert "busy advance 7.0 us, idle 3.0 us (of which after the last kernel 2.0 us)" in out
    table = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("matvec", "sample"))}
    assert table["matvec<2>"] == ["2.0", "3.50", "6.0", "0.0", "60.0%"]
    assert table["sample_kernel"] == ["1.0", "1.00", "1.0", "1.0", "20.0%"]
