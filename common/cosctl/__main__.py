import sys

from common.cosctl import main

sys.exit(main())
