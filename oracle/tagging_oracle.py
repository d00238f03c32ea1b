"""Oracle for the tagging stage: fit the notebook's 20,000-feature vectorizer with scikit-learn
1.2.2 and tag passages with numpy 1.24's argsort.

Usage: tagging_oracle.py INPUT.json OUTPUT.npz
INPUT: {"claim_files": [[name, {claim_id: {...}}], ...], "evidence": {id: text},
        "tag_ids": [ids to tag, in order], "weights_for": [ids whose tf-idf rows to return]}
OUTPUT (npz): feature_names, idf, n_docs, fit_docs (the preprocessed fit corpus), tags (JSON
text, a list of sorted tag lists aligned with tag_ids), rows_data/rows_indices/rows_indptr.
"""

import json
import sys

import numpy as np
from notebook_path import fit_corpus_frame, notebook_preprocess, passage_tags, tagging_vectorizer


def main(source, target):
    with open(source, encoding="utf-8") as handle:
        spec = json.load(handle)
    evidence = spec["evidence"]
    docs = fit_corpus_frame(spec["claim_files"], evidence)
    vectorizer = tagging_vectorizer()
    vectorizer.fit(docs)
    tags = passage_tags(vectorizer, [evidence[i] for i in spec["tag_ids"]])
    rows = vectorizer.transform([" ".join(notebook_preprocess(evidence[i])) for i in spec["weights_for"]])
    rows.sort_indices()
    np.savez(
        target,
        feature_names=np.array(vectorizer.get_feature_names_out(), dtype=str),
        idf=vectorizer.idf_,
        n_docs=np.array(len(docs)),
        fit_docs=np.array(list(docs), dtype=str),
        tags=np.array(json.dumps(tags, ensure_ascii=False)),
        rows_data=rows.data,
        rows_indices=rows.indices,
        rows_indptr=rows.indptr,
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
