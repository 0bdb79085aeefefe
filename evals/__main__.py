from evals.cli import main

raise SystemExit(main())
