"""What the user asked for.

In: the command line's options, `pyproject.toml` or `tfmemlint.toml`, the paths given. Out: the
`Settings` each file is checked with (the rules selected, the fix policy) and the files to check,
walked as ruff walks them (`discovery`).
"""
