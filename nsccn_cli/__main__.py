import sys

from nsccn_cli import entry

sys.exit(entry())
