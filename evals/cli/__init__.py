"""The ``evalgate`` commands (docs/spec.md#data-flow, docs/spec.md#exit-codes): the dispatcher (``app``, the console
script) and one thin module per command, each with ``configure(parser)`` and ``main(args) -> int``: parse, call the
library, print, exit code. ``options`` builds the parsers of the typed options (``evals.suite.options``) and reads a
parsed command line back as them. Commands import the library; nothing in the library imports ``evals.cli`` (the
``__main__`` shims of ``evals.run`` and ``evals.compare`` are the only entry points that do), and only they import
``argparse``."""
