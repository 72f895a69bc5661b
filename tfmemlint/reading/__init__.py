"""Reading a source.

In: a file's bytes. Out: its text (decoded as PEP 263 says), a notebook's cells as one module,
the statements that do not parse set aside (`recovery`), Python 2's indentation seen through a
view, large literal tables masked, the libcst tree and each node's offsets; for a Dockerfile,
Compose file, manifest or script, the `LaunchFile` its reader makes (`launch/`).

Nothing here knows a rule or a project; everything above reads through it.
"""
