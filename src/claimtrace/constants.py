"""The notebook's constants, in one place, each with the quirk it carries.

Everything here is a fact about the 2024 COMP90042 notebook (see docs/notebook-quirks.md
and ../shared/docs/notebook.md). Stages import from here; nothing here imports a stage.
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
#: Quirk "cosine added twice": score = cosine + overlap + cosine.
COSINE_WEIGHT_IN_SCORE = 2
MAX_EVIDENCES = 6

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
LEARNING_RATE = 1e-4
EPOCHS = 10
BATCH_SIZE = 16
#: Quirk "batch-first attention": the notebook feeds (batch, 128, 256) to an encoder that reads
#: (sequence, batch, features), so attention runs across the 16 claims of a batch at each
#: position and the positional encoding marks a claim's place in its batch.
BATCH_FIRST_BUG = True
VOCAB_SIZE = 5_886
