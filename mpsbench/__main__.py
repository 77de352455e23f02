import sys

from mpsbench.cli import main

sys.exit(main())
