"""What people read of a comparison (docs/spec.md#pr-comment): the markdown report and PR comment from the
``.md.j2`` templates in ``templates/`` (``markdown``, its formatters in ``filters``), the
self-contained HTML page (``html``), annotations and JUnit XML (``ci_outputs``), and the files a
gate leaves in its out dir (``files``). May import ``evals.compare``'s model and everything
below it; never ``github``, ``store`` or ``history``."""
