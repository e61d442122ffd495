"""The examples run as a user runs them (a fresh process) and check themselves: the MLP's
jitted losses equal the eager ones and fall."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_mlp_example_trains_and_matches_eager():
  r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "mlp.py"), "--steps", "4",
                      "--eager-steps", "2"], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr[-3000:]
  assert "per 4-step epoch" in r.stdout and "speed-up" in r.stdout
