import sys

from db.cli import main

sys.exit(main(sys.argv[1:]))
