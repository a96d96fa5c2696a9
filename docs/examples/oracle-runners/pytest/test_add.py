# A held pytest file whose checks run the candidate one level down, through
# STOCKADE_ISOLATE (docs/oracle.md, "Runners and candidates").
import os
import subprocess
import sys


def candidate_add(a, b):
    run = subprocess.run([os.environ["STOCKADE_ISOLATE"], "--", sys.executable,
                          "/repo/add_cli.py", str(a), str(b)],
                         capture_output=True, text=True, check=True)
    return int(run.stdout.strip())


def test_add():
    assert candidate_add(2, 3) == 5


def test_negatives():
    assert candidate_add(-1, 1) == 0
