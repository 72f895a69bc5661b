"""The faces users meet.

In: a command line, an editor's requests, flake8's calls. Out: reports in every format
(`report/`), exit statuses, the language server's diagnostics and code actions, the rule pages
(`docs`). The command line (`cli`) is the only face that also reaches `verify`.
"""
