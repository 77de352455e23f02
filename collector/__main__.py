import sys

from collector.cli.main import main

sys.exit(main())
