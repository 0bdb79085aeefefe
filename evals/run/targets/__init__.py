"""What the runner calls to get an output (docs/spec.md#targets): the ``Target`` interface (``base``), the
targets that run the user's code, a Python callable or a command (``code``, with ``build_target``
for the configured one), and the OpenAI-compatible chat endpoint (``endpoint``). A new target
kind is a ``Target`` subclass in its own module here, built by ``code.build_target``."""
