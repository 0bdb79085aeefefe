"""What the tests talk to instead of the outside world, each built from the public reference it
stands in for: GitHub's REST API (``github_server``, and ``github_fake_independent`` written apart
from evalgate's client), the model APIs (``openai_server``), PostgreSQL (``pg_server``, a real
server started for the test), a GitHub Actions runner (``actions``), and the helpers that lay out
suites and histories on disk (``suites``, ``history_db``, ``mdcheck``)."""
