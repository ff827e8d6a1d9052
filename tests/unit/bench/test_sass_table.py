"""bench/engine/sass_table.py on a synthetic ncu SASS view: the totals, the
stall reasons and the instructions that waited most."""
import csv
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "engine" / "sass_table.py"

HEADER = ["Address", "Source", "Instructions Executed", "Warp Stall Sampling (All Samples)", "stall_long_sb",
          "stall_barrier", "stall_long_sb (Not Issued)"]


def write_view(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Kernel Name", "void k<2>(int)"])
        w.writerow(HEADER)
        for i, (source, executed, long_sb, barrier) in enumerate(rows):
            w.writerow([hex(16 * i), source, executed, long_sb + barrier, long_sb, barrier, 99])


def test_totals_reasons_and_top_instructions(tmp_path):
    view = tmp_path / "sass.csv"
    write_view(view, [
        ("LDG.E R2, desc[UR4][R2.64]", 100, 0, 0),
        ("IDP.4A.S8.S8 R5, R2, R3, RZ", 100, 30, 0),
        ("BAR.SYNC.DEFER_BLOCKING 0x0", 100, 0, 12),
        ("@P0 EXIT", 50, 1, 0),
    ])
    out = subprocess.run([sys.executable, str(SCRIPT), str(view), "--top", "2"], capture_output=True, text=True,
                         check=True).stdout
    assert "350 warp instructions executed, 43 stall samples, 4 SASS lines" in out
    # Reasons summed over the kernel; the "Not Issued" columns stay out.
    assert "stall samples by reason: long_sb 31, barrier 12" in out
    top = out.split("main stall reasons\n", 1)[1].splitlines()
    assert len(top) == 2
    assert top[0].split()[:3] == ["1", "30", "69.8%"] and top[0].endswith("long_sb 30")
    assert top[1].split()[:3] == ["2", "12", "27.9%"] and top[1].endswith("barrier 12")
