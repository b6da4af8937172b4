"""The command line: help with examples, exit codes, one-line errors."""

import json
import subprocess
import sys

import pytest

from kanedyn.cli import build_parser, main

COMMANDS = ["simulate", "verify", "derive", "identify-friction", "bench", "sweep", "demo",
            "precompile"]

SCENARIO = """\
[model]
builder = "pendulum_chain"
n = 2

[initial]
q = [0.4, 0.2]

[[forces]]
type = "damper"
joint = "joint1"
damping = 0.1

[integrator]
method = "rk4"
dt = 5e-3

[run]
t_final = 0.2

[output]
report = false
"""


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "Example:" in out and f"kanedyn {command}" in out


def test_python_dash_m_runs():
    r = subprocess.run([sys.executable, "-m", "kanedyn", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "simulate" in r.stdout


def test_simulate_writes_what_it_says(tmp_path, capsys):
    sc = tmp_path / "s.toml"
    sc.write_text(SCENARIO)
    out = tmp_path / "out"
    assert main(["simulate", str(sc), "--out", str(out), "--no-progress"]) == 0
    for name in ("trajectory_rk4.npz", "trajectory_rk4.csv", "states.png", "energy_error.png",
                 "energy_budget.png", "summary.json"):
        assert (out / name).stat().st_size > 0, name
    said = capsys.readouterr().out
    assert f"wrote 6 files to {out}/: trajectory_rk4.npz, trajectory_rk4.csv" in said
    assert not (out / "report.html").exists()  # [output] report = false


@pytest.mark.parametrize("text, message", [
    (SCENARIO.replace('method = "rk4"', 'method = "rk5"'), "unknown method 'rk5'"),
    (SCENARIO.replace("n = 2", "n = two"), "malformed TOML"),
    (SCENARIO.replace('builder = "pendulum_chain"\nn = 2', 'urdf = "missing.urdf"'),
     "does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    sc = tmp_path / "s.toml"
    sc.write_text(text)
    assert main(["simulate", str(sc), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_file_unwritable_folder_and_broken_urdf(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "none.toml")]) == 2
    assert "cannot read scenario" in capsys.readouterr().err
    sc = tmp_path / "s.toml"
    sc.write_text(SCENARIO)
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["simulate", str(sc), "--out", str(blocker / "sub")]) == 2
    assert "cannot write to output folder" in capsys.readouterr().err
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='r'><link name='a'></robot>")
    assert main(["verify", str(bad)]) == 2
    assert "line" in capsys.readouterr().err
    assert main(["verify", "no_such_robot"]) == 2
    assert "unknown model 'no_such_robot'" in capsys.readouterr().err


def test_debug_shows_the_traceback(tmp_path):
    with pytest.raises(Exception, match="cannot read scenario"):
        main(["--debug", "simulate", str(tmp_path / "none.toml")])


def test_verify_passes_on_a_sound_model(capsys):
    assert main(["verify", "pendulum_chain:n=2", "--samples", "2"]) == 0
    out = capsys.readouterr().out
    assert "symmetric" in out.lower()


def test_usage_errors_exit_2():
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["simulate"])
    assert e.value.code == 2


def test_sweep_command_runs_a_grid(tmp_path, capsys):
    from kanedyn.sim.sweep import read_results

    sc = tmp_path / "s.toml"
    sc.write_text(SCENARIO)
    out = tmp_path / "sw"
    assert main(["sweep", str(sc), "--over", "model.length=0.5,1.0", "--out", str(out),
                 "--no-progress"]) == 0
    assert "2 runs, 0 failed" in capsys.readouterr().out
    rows = read_results(out)
    assert [r["param:model.length"] for r in rows] == [0.5, 1.0]
    # a longer pendulum swings more slowly: it has moved less after the same time
    short, long_ = (json.loads(r["final_q"])[0] for r in rows)
    assert abs(long_ - 0.4) < abs(short - 0.4)
    assert main(["sweep", str(sc), "--over", "model.lenght=1", "--out", str(tmp_path / "b")]) == 2
    assert "unknown parameter 'model.lenght'" in capsys.readouterr().err


def test_output_formats_and_plots_are_honoured(tmp_path, capsys):
    sc = tmp_path / "s.toml"
    sc.write_text(SCENARIO.replace("report = false", 'formats = ["csv"]\nplots = false'))
    out = tmp_path / "o"
    assert main(["simulate", str(sc), "--out", str(out), "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "trajectory_rk4.csv"]
    sc.write_text(SCENARIO.replace("report = false", 'formats = ["hdf5"]'))
    assert main(["simulate", str(sc), "--out", str(out), "--no-progress"]) == 2
    assert "unknown ['hdf5']; valid: npz, csv" in capsys.readouterr().err
