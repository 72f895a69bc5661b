"""The project around a file.

In: a parsed module and the folder it sits in. Out: what each name of the module stands for
(`names`: scopes, bindings, call sites, resolved through the module's imports), and the project's
other modules, summarised once each, to follow a name or a program into them (`index`), with the
launch files that run them (`module_files`).

Which API paths are TensorFlow's is the rules' knowledge, handed down (`rules/tensorflow_api.py`).
"""
