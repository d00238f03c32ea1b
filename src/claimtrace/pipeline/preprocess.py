"""Stage 1, preprocess: the notebook's text preprocessing, exactly (notebook.md section 1).

Two variants:

* ``final`` (``keep_stopwords=False``): the function the notebook ended with. It makes the
  claim tags, the tagging vectorizer's tokenizer, the retrieval vectorizer's tokenizer and the
  classifier's input text.
* ``keep_stopwords=True``: the older function that built the pickled corpus the tagging
  vectorizer was fit on. Same steps, stopwords kept ("has" -> "ha" survives).

Steps: contractions.fix (IndexError -> text unchanged); lowercase; every ASCII punctuation
mark -> space; nltk word tokenizer; drop stopwords (final only) and non-alphabetic tokens;
Porter stem.
"""

from __future__ import annotations

import re
import string
import sys
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import contractions

from claimtrace.data.files import chosen_data_dir, find_data_dir, load_stopwords


def _import_nltk_quickly():
    """nltk's tokenizer and Porter stemmer, imported without the parts of nltk we never call.

    Importing anything from nltk runs its package ``__init__``, which imports most of nltk; that
    pulls in scipy.stats (for one statistic of the collocation finder) and scikit-learn (for two
    optional wrappers), about 1 s of the site's start. nltk imports both inside
    ``try/except ImportError`` and falls back; hiding them for the duration of this import takes
    those fallbacks. The tokenizer and stemmer are the same code either way, and scipy.stats and
    scikit-learn import normally afterwards (the entries hidden here are put back as they were).
    """
    # Only what is not imported yet is hidden (already imported, nltk finds it at no cost).
    hidden = [name for name in ("scipy.stats", "sklearn") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # "import name" raises ImportError
    try:
        from nltk.stem import PorterStemmer
        from nltk.tokenize import NLTKWordTokenizer, word_tokenize
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return PorterStemmer, NLTKWordTokenizer, word_tokenize


PorterStemmer, NLTKWordTokenizer, word_tokenize = _import_nltk_quickly()

#: Quirk: only ASCII punctuation is replaced (string.punctuation); “ ” ’ … stay and the
#: tokenizer separates them; "sentence.abc" becomes two words.
_PUNCTUATION_TO_SPACE = str.maketrans({mark: " " for mark in string.punctuation})


def expand_contractions(text: str) -> str:
    """contractions.fix, as the notebook called it: on IndexError (the library fails on some
    inputs) the text is kept unchanged."""
    try:
        return contractions.fix(text)
    except IndexError:
        return text


def normalise(text: str) -> str:
    """Steps 1-3: expand contractions, lowercase, ASCII punctuation to spaces."""
    return expand_contractions(text).lower().translate(_PUNCTUATION_TO_SPACE)


#: Characters for which nltk's word tokenizer has rules once ASCII punctuation is gone: its
#: Unicode quotes. A line without them meets only the tokenizer's split-word rules.
_TOKENIZER_QUOTES = frozenset("«“‘„»”’")
_SPLIT_WORDS = NLTKWordTokenizer.CONTRACTIONS2
_SPLIT_WORD_HINT = re.compile(r"(?i)cannot|d'ye|gimme|gonna|gotta|lemme|more'n|wanna")
_ASCII_PUNCTUATION = re.compile("[" + re.escape(string.punctuation) + "]")


def tokenize(normalised: str) -> list[str]:
    """Step 4: nltk's word tokenizer on the whole line.

    ``nltk.word_tokenize`` first splits sentences with punkt, whose only sentence-ending marks
    are ``.?!``; step 3 removed them all, so the split cannot happen and the whole line is one
    sentence (tests/pipeline/test_preprocess.py proves this property). ``preserve_line=True`` skips
    punkt, whose trained model is data that nltk downloads and we do not need.

    Fast path, same tokens: on a line with no ASCII punctuation and none of the Unicode quotes,
    every rule of nltk's tokenizer is a no-op except its split-word rules (``cannot`` ->
    ``can not``, ``gonna`` -> ``gon na``...), so those alone run, with nltk's own patterns,
    and only when one of the words is there (tests prove the equality).
    """
    if _TOKENIZER_QUOTES.isdisjoint(normalised) and not _ASCII_PUNCTUATION.search(normalised):
        if _SPLIT_WORD_HINT.search(normalised) is None:
            return normalised.split()
        text = " " + normalised + " "
        for pattern in _SPLIT_WORDS:
            text = pattern.sub(r" \1 \2 ", text)
        return text.split()
    return word_tokenize(normalised, preserve_line=True)


# --- Stopwords ------------------------------------------------------------------------------


@cache
def _stopwords_in(data_dir: str | Path | None) -> frozenset[str]:
    return load_stopwords(find_data_dir(data_dir))


def stopwords(data_dir: str | Path | None = None) -> frozenset[str]:
    """The 179 English stopwords nltk's data served in 2024, checked against a pinned digest
    (:func:`claimtrace.data.files.load_stopwords`), from ``data_dir``, else from the data folder the
    command chose (``--data``), else the default one: the same folder as every other input."""
    return _stopwords_in(data_dir if data_dir is not None else chosen_data_dir())


# --- Stemming -------------------------------------------------------------------------------

_STEMMER = PorterStemmer()  # NLTK_EXTENSIONS mode, as the notebook's default constructor


@lru_cache(maxsize=1 << 20)
def stem(word: str) -> str:
    """Porter stem of one word (cached: the corpus repeats words millions of times)."""
    return _STEMMER.stem(word)


def bound_stem_cache(words: int) -> None:
    """Empty the stem cache when it holds more than ``words`` words. A server calls it after
    each typed claim: made-up words would otherwise grow the cache (2^20 words, about 250 MB,
    sized for a build's corpus) for as long as it runs; re-stemming a word costs microseconds."""
    if stem.cache_info().currsize > words:
        stem.cache_clear()


# --- The whole function ---------------------------------------------------------------------


@dataclass(frozen=True)
class Preprocessed:
    """What the notebook's function saw: tokenizer output, tokens kept, their stems."""

    tokens: list[str]
    kept: list[str]
    stems: list[str]

    def text(self) -> str:
        """The stems joined with spaces, as the notebook stored them."""
        return " ".join(self.stems)

    def tags(self) -> str:
        """A claim's tags: its stems sorted, duplicates kept, joined with spaces."""
        return " ".join(sorted(self.stems))


def preprocess(text: str, keep_stopwords: bool = False, data_dir: Path | None = None) -> Preprocessed:
    """Run the notebook's preprocessing on one text (see the module docstring)."""
    tokens = tokenize(normalise(text))
    if keep_stopwords:
        kept = [token for token in tokens if token.isalpha()]
    else:
        drop = stopwords(data_dir)
        kept = [token for token in tokens if token not in drop and token.isalpha()]
    return Preprocessed(tokens, kept, [stem(token) for token in kept])


def preprocess_both(text: str, data_dir: Path | None = None) -> tuple[Preprocessed, Preprocessed]:
    """Both variants of one text from a single tokenization: (keep-stopwords, final)."""
    tokens = tokenize(normalise(text))
    drop = stopwords(data_dir)
    alphabetic = [token for token in tokens if token.isalpha()]
    kept = [token for token in alphabetic if token not in drop]
    return (
        Preprocessed(tokens, alphabetic, [stem(token) for token in alphabetic]),
        Preprocessed(tokens, kept, [stem(token) for token in kept]),
    )
