from evals.cli.app import main

raise SystemExit(main())
