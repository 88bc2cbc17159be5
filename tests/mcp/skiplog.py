"""A part of a suite skipped on this run: a line now, and one in the file tests/run.sh lists
again at the end of the run ($KIWI_SKIP_LOG), so no skip goes unseen in a long log."""

import os


def skipped(suite: str, what: str) -> None:
    # One line each: the list at the end of the run is read line by line.
    line = " ".join(f"{suite}: {what}".split())
    print(f"SKIPPED: {line}", flush=True)
    log = os.environ.get("KIWI_SKIP_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(line + "\n")
