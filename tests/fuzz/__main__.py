"""`python -m tests.fuzz ...`: see tests/fuzz/campaign.py (the workers of --jobs import
that module: functions of a `__main__` module cannot be sent to spawned processes)."""
import sys

from tests.fuzz.campaign import main

if __name__ == "__main__":
  sys.exit(main())
