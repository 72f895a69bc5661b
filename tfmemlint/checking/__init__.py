"""Checking one text.

In: a file's text, its settings, the project around it. Out: its findings, each with its fix when
one can be built, and suppression comments honoured. `prefilter` turns away the text that cannot
hold a finding before anything parses it; `engine` runs the rule families on a Python text,
`launch_check` on a launch file's.
"""
