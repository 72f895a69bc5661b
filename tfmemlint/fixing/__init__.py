"""What a fix is made of, and what proves it safe.

In: a file's text and tree. Out: edits at exact offsets (`fixes`: built from nodes, combined,
applied) and the safety net that refuses a fixed text whose tree differs from the original's in
anything a fix does not add (`safety`).

The loop that applies fixes round after round checks each round's text again, so it drives the
checks from above: `running/fix_loop.py`. ruff keeps its edits in `fix/` and its loop in the
linter for the same reason.
"""
