"""Oracle for preprocessing: stdin a JSON list of texts; stdout a JSON list of
[final stems, keep-stopwords stems] per text, from the notebook's library calls."""

import json
import sys

from notebook_path import notebook_preprocess

texts = json.load(sys.stdin)
json.dump([[notebook_preprocess(t), notebook_preprocess(t, keep_stopwords=True)] for t in texts], sys.stdout)
