from evals.cli.app import main
from evals.cli.leave import leave

leave(main())
