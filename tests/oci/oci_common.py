"""What the OCI tests (lifecycle.py, podman.py) share."""
import os
import sys

BUSYBOX = "/bin/busybox"


def skip(why):
    """Exit 77 (ctest's skip), or fail under CI=true: a test that cannot run
    there must not pass quietly."""
    print(f"SKIP: {why}")
    if os.environ.get("CI") == "true":
        print("FAIL: CI=true turns this skip into a failure")
        sys.exit(1)
    sys.exit(77)
