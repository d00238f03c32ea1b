"""The notebook's constants, in one place, each with the quirk it carries.

Everything here is a fact about the 2024 COMP90042 notebook (see ../shared/docs/notebook.md, and
docs/architecture.md for where each quirk is reproduced). Stages import from here; nothing here
imports a stage.
"""

from __future__ import annotations

# --- Data (notebook.md section 0) -------------------------------------------------------

#: md5 of each course file as the course handed it out. A claim file with another digest is
#: refused; a user's evidence.json with another digest only gets a warning.
COURSE_FILE_MD5 = {
    "train-claims.json": "671a07d1545a2dc467e870bc1e76961c",
    "dev-claims.json": "0076e390272dacfb27341f9190985c5c",
    "test-claims-unlabelled.json": "8b5309187ac284963a5c6ec0ff467a3b",
    "dev-claims-baseline.json": "5ca47229487d6cf7faa964f94e77777c",
}
EVIDENCE_MD5 = "091fd62cccba1105fd8de5c38b541f91"
EVIDENCE_PASSAGES = 1_208_827

#: Split name -> course file. "baseline" is the course's example prediction file for dev.
SPLIT_FILES = {
    "train": "train-claims.json",
    "dev": "dev-claims.json",
    "test": "test-claims-unlabelled.json",
    "baseline": "dev-claims-baseline.json",
}
#: The course's claim sets, in the order the pipeline runs them: train and dev are labelled
#: (gold evidence), test is not.
SPLITS = ("train", "dev", "test")
COURSE_DIR = "comp90042-2024"
CLIMATE_FEVER_FILE = "climate-fever/climate-fever.jsonl"
NLTK_DATA_DIR = "nltk_data"

LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")
#: Label ids as the notebook numbered them (the classifier's output columns).
LABEL_IDS = {label: i for i, label in enumerate(LABELS)}

# --- Preprocessing (notebook.md section 1) ----------------------------------------------

#: sha256 of the 179 English stopwords that nltk's data served in 2024, one per line in file
#: order. A different list would silently change every tag, so it is refused.
STOPWORDS_SHA256 = "2faef318155a30d7e91c39de3f51fde2eb44a3fe24e0adb0c504fd35c7add888"
STOPWORDS_COUNT = 179

# --- Tagging TF-IDF (notebook.md section 2) ---------------------------------------------

TAGGING_VECTORIZER = dict(
    max_df=0.5,
    min_df=5,
    max_features=20_000,
    ngram_range=(1, 3),
    use_idf=True,
    norm="l2",
)
#: Quirk "stems of stems": the fit corpus was preprocessed (keep-stopwords variant) and then the
#: vectorizer's tokenizer preprocessed it again (final variant), so it counts stems of stems.
#: Quirk "zero-weight padding": a passage's top ten is np.argsort(row)[-10:][::-1]; with fewer
#: than ten non-zero weights the rest are zero-weight features chosen by numpy's introsort.
TAGS_PER_PASSAGE = 10
#: The notebook shuffled the passage table with sample(frac=1, random_state=42).
PASSAGE_SHUFFLE_SEED = 42

# --- Retrieval (notebook.md section 4) --------------------------------------------------

RETRIEVAL_VECTORIZER = dict(
    max_df=0.5,
    min_df=3,
    max_features=1000,
    ngram_range=(1, 1),
    use_idf=True,
    norm="l2",
)
COSINE_THRESHOLD = 0.55  # keep cosine > 0.55
OVERLAP_THRESHOLD = 0.5  # and overlap > 0.5
#: Quirk "cosine added twice": score = cosine + overlap + cosine, evaluated left to right as
#: ``(similarities + overlap_rates) + similarities_between_claim_and_evidence``.
COSINE_WEIGHT_IN_SCORE = 2
#: The query's third clause, ``combined_score > 1.5``. Implied by the other two while the cosine
#: is counted twice (the score is then > 1.6); binding in the "cosine-once" variant.
SCORE_THRESHOLD = 1.5
MAX_EVIDENCES = 6
# Quirk "cosine re-normalised": the notebook called sklearn's cosine_similarity on rows that
# transform had already l2-normalised, so both sides are normalised twice, each time summing
# squares in the order scikit-learn 1.2.2 stores a transformed row (columns descending: the
# ``X * idf_diag`` product of scipy emits them in reverse); the dot product then adds the claim's
# terms in that same descending order. Any other order changes last bits (and ties).
# (Reproduced in retrieval.kernels.notebook_weights and retrieval.kernels.claim_kernel.)

#: Quirk "CSV NA tags": passage tags went through to_csv/read_csv(...).dropna(subset=
#: ['evidence_tags']) before retrieval, so a tag string equal to one of pandas 2.0.3's default
#: NA strings was dropped with the empty ones. Tags are lowercase stems: "nan" and "null" can
#: occur (a passage whose only alphabetic top feature is "null" is not retrieved).
CSV_NA_TAGS = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
#: Not the notebook's: a claim with no tags divided by zero in compute_overlap_rate (min(0, n)).
#: The port gives it overlap 0 against every passage, so its cosine and score are all 0, nothing
#: passes the filter, and it gets the fallback: the first six passages of numpy's quicksort of an
#: all-zero score column (reversed, as pandas sorts descending), in the canonical passage order.
NO_TAGS_OVERLAP = 0.0
# Quirk "raw claim text": the notebook's final dev and test runs called find_top_evidence with
# ``df.claim_text`` instead of the claim's sorted stems (dev F = 0.011 instead of 0.04299); the
# retrieval variant "raw-claim-text" reproduces it.

# --- Classifier (notebook.md sections 5 and 6) ------------------------------------------

SPECIAL_TOKENS = ("<unk>", "[CLS]", "[SEP]", "[PAD]")
UNK, CLS, SEP, PAD = SPECIAL_TOKENS
MAX_LEN = 128
EMBED_DIM = 256
N_HEADS = 8
N_LAYERS = 6
FF_DIM = 512
DROPOUT = 0.1
PE_MAX_LEN = 5000
#: The notebook's LSTM (its "LSTM Classification Model" cell): 4 stacked layers of 256.
LSTM_LAYERS = 4
LEARNING_RATE = 1e-4
EPOCHS = 10
BATCH_SIZE = 16
# Quirk "batch-first attention": the notebook feeds (batch, 128, 256) to an encoder that reads
# (sequence, batch, features), so attention runs across the 16 claims of a batch at each
# position and the positional encoding marks a claim's place in its batch.
# (Reproduced in classifier.model; its fixed=True variant is the intended model.)
VOCAB_SIZE = 5_886
# Quirk "x sqrt(128)": the embedding is scaled by sqrt(src.size(1)), the sequence length,
# not by sqrt(d_model) = sqrt(256) as in "Attention is all you need".
# (Reproduced in classifier.model.)
#: Quirk "pe by batch position": pe[:x.size(0)] on batch-first input, so a claim alone (or first
#: in its batch) gets pe[0] at every position: sin(0) = 0 on even features, cos(0) = 1 on odd.
ALONE_PE_ROW = 0
# The notebook's optimiser and loss: Adam (default betas/eps, no weight decay), CrossEntropyLoss.
# (Reproduced in classifier.train.)
# Batches in file order: the notebook's DataLoader had no shuffle, for training and dev alike.
# The last training batch has 1,228 mod 16 = 12 claims, the last dev batch 154 mod 16 = 10.
# (Reproduced in classifier.train: no shuffle.)

# Checkpoint kept: best dev accuracy so far, strictly greater (starting from 0), as the
# notebook's `if val_acc > best_accuracy: torch.save(...)`.
# (Reproduced in classifier.train.)

#: Not the notebook's (it ran on one Colab CPU/GPU with no seed): this port seeds torch and
#: runs on two CPU threads so that a run is repeatable on one machine.
TORCH_THREADS = 2
#: The two ways the port runs the classifier on a split (notebook.md section 7):
#: "alone" = each claim as a batch of one (explained exactly by the 5,886 x 4 table);
#: "notebook" = batches of 16 in file order, as the notebook evaluated and predicted.
PROTOCOLS = ("alone", "notebook")
#: How far PyTorch's float32 forward pass may lie from the exact float64 table (logits of a
#: claim alone, and rows of the table). float32 sums depend on the CPU's kernels (AVX-512, AVX2
#: or generic) and on how a GEMM is shaped, so the figure varies by machine: 4e-7 to 1.4e-6
#: for claims and 3.8e-6 for table rows, and 4.5e-6 between generic and AVX-512 kernels, on an
#: AVX-512 Xeon; 5.4e-7 on a CPU without AVX-512. No verdict changed on any of them. The float64
#: table itself agrees with itself within 1e-14 everywhere (docs/architecture.md, "Reference
#: platform").
FLOAT32_AGREEMENT = 1e-5
#: The shipped checkpoint and what goes with it (src/claimtrace/assets/).
CHECKPOINT_FILE = "classifier.safetensors"
TABLE_FILE = "classifier_table.safetensors"
PROVENANCE_FILE = "classifier_provenance.json"
VOCAB_FILE = "classifier_vocab.json"
TRAINING_LOG_FILE = "training_log.json"
#: The classifiers claimtrace trains: "notebook" (the notebook's model, bugs included) and
#: "intended" (the same model with the batch-first and pe-by-batch-position bugs fixed; trained
#: the same way, shipped in float16, its exactness not claimed). Files per variant:
#: "lstm" is the notebook's other model (models.lstm), trained the same way and shipped in
#: float16 too.
CLASSIFIER_VARIANTS = ("notebook", "intended", "lstm")
CHECKPOINT_FILES = {
    "notebook": CHECKPOINT_FILE,
    "intended": "classifier_intended.safetensors",
    "lstm": "classifier_lstm.safetensors",
}
TRAINING_LOG_FILES = {
    "notebook": TRAINING_LOG_FILE,
    "intended": "training_log_intended.json",
    "lstm": "training_log_lstm.json",
}
PROVENANCE_FILES = {
    "notebook": PROVENANCE_FILE,
    "intended": "classifier_intended_provenance.json",
    "lstm": "classifier_lstm_provenance.json",
}
#: The seed of the shipped checkpoint (see classifier_provenance.json for why this one).
SHIPPED_SEED = 0
#: libgomp's wait policy for torch's OpenMP threads. On a CPU shared with other processes the
#: default (spinning at every barrier) made 2-thread training several times slower than PASSIVE
#: (docs/benchmarks.md, "The build"); the weights are bit-identical either way. It must
#: be in the environment before torch is imported, so the CLI commands set it (setdefault) first.
OMP_WAIT_POLICY = "PASSIVE"
