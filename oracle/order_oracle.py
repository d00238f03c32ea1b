"""Oracle for the canonical passage order: argv[1] = n; prints the row positions of
pandas 2.0.3's DataFrame.sample(frac=1, random_state=42) as JSON."""

import json
import sys

import pandas as pd
import reference_platform

reference_platform.require()  # numpy's generic path on every CPU

n = int(sys.argv[1])
print(json.dumps(pd.DataFrame({"i": range(n)}).sample(frac=1, random_state=42)["i"].tolist()))
