"""The Python kit's tests: python3 -m unittest discover -s kits/python/tests -t kits/python"""

import logging
import os

# The receiver logs every refusal the tests provoke: shown only with EARSHOT_TEST_LOGS=1.
if not os.environ.get("EARSHOT_TEST_LOGS"):
    logging.getLogger("earshot_partner").addHandler(logging.NullHandler())
    logging.getLogger("earshot_partner").propagate = False
