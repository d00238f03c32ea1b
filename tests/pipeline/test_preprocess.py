"""Preprocessing, exact to notebook.md section 1."""

from __future__ import annotations

import json
import string
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize import NLTKWordTokenizer, PunktSentenceTokenizer
from nltk.tokenize.punkt import PunktLanguageVars

from claimtrace.data import files as data
from claimtrace.errors import DataError
from claimtrace.pipeline import preprocess as P


def test_claim_752_tags(preprocessor):
    result = preprocessor.preprocess("[South Australia] has the most expensive electricity in the world.")
    assert result.tokens == "south australia has the most expensive electricity in the world".split()
    assert result.kept == "south australia expensive electricity world".split()
    assert result.stems == "south australia expens electr world".split()
    assert result.tags() == "australia electr expens south world"


def test_keep_stopwords_variant_example_line(data_dir, preprocessor):
    gold = data.gold_passages(data_dir)
    doc = "[South Australia] has the most expensive electricity in the world." + " " + gold["evidence-67732"]
    assert preprocessor.preprocess(doc, keep_stopwords=True).text() == (
        "south australia ha the most expens electr in the world citat need south australia ha "
        "the highest retail price for electr in the countri"
    )


@pytest.mark.parametrize(
    "text, tokens, stems",
    [
        ("I cannot", ["i", "can", "not"], []),
        ("gonna", ["going", "to"], ["go"]),  # contractions' slang list expands it first
        ("gon na", ["gon", "na"], ["gon", "na"]),
        ("“Zürich” said", ["“", "zürich", "”", "said"], ["zürich", "said"]),
        ("in 1855 it was 40", ["in", "1855", "it", "was", "40"], []),
        ("sentence.abc", ["sentence", "abc"], ["sentenc", "abc"]),
        ("isn't", ["is", "not"], []),
    ],
)
def test_tokenizer_cases(text, tokens, stems, preprocessor):
    result = preprocessor.preprocess(text)
    assert result.tokens == tokens
    assert result.stems == stems


def test_contractions_index_error_keeps_text(preprocessor):
    # contractions 0.1.73 raises IndexError when lower() changes the text's length ("İ").
    import contractions

    with pytest.raises(IndexError):
        contractions.fix("İstanbul isn't")
    assert P.expand_contractions("İstanbul isn't") == "İstanbul isn't"
    assert preprocessor.preprocess("İstanbul isn't").tokens == ["i̇stanbul", "isn", "t"]


def test_stems_of_stems(preprocessor):
    assert P.stem("increased") == "increas"
    assert P.stem(P.stem("increased")) == "increa"
    assert preprocessor.stem(preprocessor.stem("increased")) == "increa"


def test_stopwords_are_the_2024_list(preprocessor):
    words = preprocessor.stopwords
    assert len(words) == 179 and "shan't" in words and "has" in words


def test_the_stem_cache_keeps_its_bound(preprocessor):
    """A preprocessor's stem cache is emptied past its bound (and on demand, past a tighter one):
    the stems are the same either way."""
    small = P.Preprocessor(preprocessor.stopwords, stem_cache_words=3)
    words = ["melting", "glaciers", "rising", "seas", "warmer", "oceans", "melting"]
    assert [small.stem(w) for w in words] == [P.stem(w) for w in words]
    assert small.cached_stems <= 3
    assert small.preprocess(" ".join(words)).stems == preprocessor.preprocess(" ".join(words)).stems
    assert small.cached_stems <= 3
    small.bound_stem_cache(0)
    assert small.cached_stems == 0


def _stopwords_zip(folder: Path, member: str, content: bytes) -> Path:
    """A data folder whose nltk_data/corpora/stopwords.zip holds ``member`` = ``content``."""
    root = folder / "nltk_data" / "corpora"
    root.mkdir(parents=True)
    with zipfile.ZipFile(root / "stopwords.zip", "w") as archive:
        archive.writestr(member, content)
    return root / "stopwords.zip"


def test_changed_stopword_list_is_refused(tmp_path):
    _stopwords_zip(tmp_path, "stopwords/english", b"a\nthe\n")
    with pytest.raises(DataError, match="stopwords.zip: this is not the 2024 English stopword list"):
        P.Preprocessor.of_data_dir(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="stopwords.zip: file is missing"):
        P.Preprocessor.of_data_dir(tmp_path / "empty")


@pytest.mark.parametrize(
    "member, content, message",
    [
        ("stopwords/english", b"\xffa\nthe", "is not UTF-8 text (invalid start byte at byte offset 0)"),
        ("stopwords/french", b"le\nla", "the archive holds no stopwords/english"),
    ],
)
def test_bad_stopword_archive_is_refused(tmp_path, member, content, message):
    path = _stopwords_zip(tmp_path, member, content)
    with pytest.raises(DataError) as caught:
        P.Preprocessor.of_data_dir(tmp_path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_garbage_stopwords_zip_is_refused(tmp_path):
    root = tmp_path / "nltk_data" / "corpora"
    root.mkdir(parents=True)
    (root / "stopwords.zip").write_bytes(b"not a zip at all")
    with pytest.raises(DataError, match="stopwords.zip: not a readable zip archive"):
        P.Preprocessor.of_data_dir(tmp_path)


def test_unzipped_stopword_list_is_read(tmp_path, data_dir):
    with zipfile.ZipFile(data_dir / data.STOPWORDS_ZIP) as archive:
        english = archive.read(data.STOPWORDS_MEMBER)
    unzipped = tmp_path / data.STOPWORDS_UNZIPPED
    unzipped.parent.mkdir(parents=True)
    unzipped.write_bytes(english)
    assert data.stopwords_file(tmp_path) == unzipped
    assert P.Preprocessor.of_data_dir(tmp_path).stopwords == P.Preprocessor.of_data_dir(data_dir).stopwords


def test_each_preprocessor_reads_its_own_stopword_list(tmp_path, preprocessor):
    """The stopword list is the preprocessor's, read from the folder it was made of (the CLI's
    --data): a bad list there stops it, and another preprocessor is not touched."""
    _stopwords_zip(tmp_path, "stopwords/english", b"a\nthe")
    with pytest.raises(DataError, match=str(tmp_path)):
        P.Preprocessor.of_data_dir(tmp_path)
    assert preprocessor.preprocess("Glaciers are melting").stems == ["glacier", "melt"]
    assert P.Preprocessor(frozenset({"glaciers"})).preprocess("Glaciers are melting").stems == ["are", "melt"]


# After step 3 no '.', '?' or '!' is left, so punkt's sentence split (which only ever breaks
# after one of its sentence-ending marks) cannot cut the line: tokenizing the whole line gives
# the same tokens. An untrained punkt tokenizer proves it: training only decides *whether* a
# candidate mark ends a sentence, never adds candidates.
assert PunktLanguageVars.sent_end_chars == (".", "?", "!")


_text = st.text(
    alphabet=st.sampled_from(list(string.ascii_letters + string.punctuation + " \t\n'’“”…—–-0123456789éüİß")),
    max_size=80,
)


@settings(max_examples=400, deadline=None)
@given(_text)
def test_sentence_split_cannot_change_tokens(text):
    normalised = P.normalise(text)
    assert not set(".?!") & set(normalised)
    sentences = PunktSentenceTokenizer().tokenize(normalised)
    split_tokens = [t for s in sentences for t in NLTKWordTokenizer().tokenize(s)]
    whole_line = P.tokenize(normalised)
    assert whole_line == split_tokens
    assert len(sentences) <= 1


@pytest.mark.oracle
def test_every_passage_and_claim_matches_the_notebook_calls(data_dir, preprocessor, oracle):
    texts = list(data.demo_corpus(data_dir).values())
    for split in ("train", "dev", "test"):
        texts += [c.text for c in data.load_claims(split, data_dir).values()]
    texts += ["İstanbul isn't", "I cannot", "gonna y'all'd've", "“Zürich” 1855 sentence.abc"]
    expected = json.loads(oracle("preprocess_oracle.py", stdin=json.dumps(texts)))
    ours = [[preprocessor.preprocess(t).stems, preprocessor.preprocess(t, keep_stopwords=True).stems] for t in texts]
    mismatches = [t for t, a, b in zip(texts, ours, expected) if a != b]
    assert not mismatches, mismatches[:5]


_line = st.lists(
    st.sampled_from(
        list("abcdegilmnotwy ANTW\t\n’“”«»‘„…—éüİßſK")
        + ["cannot", "gonna", "wanna", "gimme", "lemme", "gotta", "Gon", "na"]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "cannot",
                "gonna",
                "wanna",
                "gimme",
                "lemme",
                "gotta",
                "gon",
                "na",
                "x",
                "’",
                "“",
                "ſ",
                "K",
                "é",
                " ",
                "\t",
            ]
        ),
        max_size=20,
    ).map("".join)
    | _line
)
def test_fast_tokenizer_equals_nltk(text):
    normalised = P.normalise(text)
    assert P.tokenize(normalised) == NLTKWordTokenizer().tokenize(normalised)


def test_nltk_is_imported_without_scipy_stats_or_scikit_learn():
    """Importing the preprocessing hides scipy.stats and scikit-learn from nltk's package import
    (about 1 s of a server's start); both import normally afterwards, and nltk's tokenizer and
    stemmer are nltk's own."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from claimtrace.pipeline import preprocess\n"
        "assert 'scipy.stats' not in sys.modules and 'sklearn' not in sys.modules\n"
        "import nltk.stem.porter, nltk.tokenize\n"
        "assert preprocess.PorterStemmer is nltk.stem.porter.PorterStemmer\n"
        "assert preprocess.word_tokenize is nltk.tokenize.word_tokenize\n"
        "import scipy.stats, sklearn.feature_extraction.text\n"
        "assert scipy.stats.fisher_exact([[1, 2], [3, 4]])\n"
        "from claimtrace.data.files import find_data_dir\n"
        "preprocessor = preprocess.Preprocessor.of_data_dir(find_data_dir())\n"
        "print(preprocessor.preprocess('Sea levels are rising faster, gonna say').stems)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['sea', 'level', 'rise', 'faster', 'go', 'say']"
