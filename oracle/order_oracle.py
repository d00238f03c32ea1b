"""Oracle for the canonical passage order: argv[1:] = one or more n; prints, for each n, the row
positions of pandas 2.0.3's DataFrame.sample(frac=1, random_state=42), as one JSON list of lists
(several n in one process: each start imports pandas)."""

import json
import sys

import pandas as pd
import reference_platform

reference_platform.require()  # numpy's generic path on every CPU

print(
    json.dumps([pd.DataFrame({"i": range(int(n))}).sample(frac=1, random_state=42)["i"].tolist() for n in sys.argv[1:]])
)
