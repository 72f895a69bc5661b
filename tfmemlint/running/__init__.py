"""Running a check over files.

In: the files to check and their settings. Out: one `FileResult` per file, written back when
fixing. `file_check` checks one file or buffer (read, pre-filter, check or fix, write); `fix_loop`
fixes in rounds and proves the result (`reparse` parses only what a round changed); `cache`
serves what did not change; `runner` spreads the files over worker processes.
"""
