"""Stage 1, preprocess: the notebook's text preprocessing, exactly (notebook.md section 1), as a
:class:`Preprocessor`, which holds what it reads (the stopword list of the command's data folder)
and the stems it has made (a cache with a bound).

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
from pathlib import Path

import contractions

from claimtrace.data.files import load_stopwords


def _import_nltk_quickly():
    """nltk's tokenizer and Porter stemmer, imported without the parts of nltk we never call.

    Importing anything from nltk runs its package ``__init__``, which imports most of nltk; that
    pulls in scipy.stats (for one statistic of the collocation finder) and scikit-learn (for two
    optional wrappers), much of the site's start (docs/benchmarks.md, "The site over a course-scale
    build"). nltk imports both inside
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


# --- Stemming -------------------------------------------------------------------------------

_PORTER = PorterStemmer()  # NLTK_EXTENSIONS mode, as the notebook's default constructor; keeps no state


def stem(word: str) -> str:
    """Porter stem of one word (not cached: :meth:`Preprocessor.stem` is, for the corpus)."""
    return _PORTER.stem(word)


#: At most how many words a :class:`Preprocessor`'s stem cache holds before it is emptied: sized
#: for a build's corpus (a million passages use fewer distinct words).
STEM_CACHE_WORDS = 1 << 20


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


class Preprocessor:
    """The notebook's preprocessing (see the module docstring) with what it reads: the stopword
    list of a data folder, and the Porter stems it has made, kept while the corpus repeats its
    words millions of times.

    stopwords: the 179 English stopwords nltk's data served in 2024
    (:func:`claimtrace.data.files.load_stopwords`; :meth:`of_data_dir` reads them from a data
    folder). stem_cache_words: the bound of the stem cache, emptied when it would hold more
    (a word stemmed again costs little); a server bounds it tighter after each typed claim
    (:meth:`bound_stem_cache`), whose made-up words would otherwise grow it for as long as it runs.
    """

    def __init__(self, stopwords: frozenset[str], stem_cache_words: int = STEM_CACHE_WORDS):
        self.stopwords = frozenset(stopwords)
        self.stem_cache_words = stem_cache_words
        self._stems: dict[str, str] = {}

    @classmethod
    def of_data_dir(cls, data_dir: str | Path) -> Preprocessor:
        """The preprocessing with the stopword list of the data folder ``data_dir`` (checked
        against a pinned digest: a different list would silently change every tag)."""
        return cls(load_stopwords(Path(data_dir)))

    def stem(self, word: str) -> str:
        """Porter stem of one word, cached."""
        found = self._stems.get(word)
        return found if found is not None else self._new_stem(word)

    def _new_stem(self, word: str) -> str:
        if len(self._stems) >= self.stem_cache_words:
            self._stems.clear()
        found = self._stems[word] = _PORTER.stem(word)
        return found

    @property
    def cached_stems(self) -> int:
        """How many words the stem cache holds."""
        return len(self._stems)

    def bound_stem_cache(self, words: int) -> None:
        """Empty the stem cache when it holds more than ``words`` words."""
        if len(self._stems) > words:
            self._stems.clear()

    def _stems_of(self, kept: list[str]) -> list[str]:
        known = self._stems.get
        return [known(token) or self._new_stem(token) for token in kept]

    def preprocess(self, text: str, keep_stopwords: bool = False) -> Preprocessed:
        """Run the notebook's preprocessing on one text (see the module docstring)."""
        tokens = tokenize(normalise(text))
        if keep_stopwords:
            kept = [token for token in tokens if token.isalpha()]
        else:
            drop = self.stopwords
            kept = [token for token in tokens if token not in drop and token.isalpha()]
        return Preprocessed(tokens, kept, self._stems_of(kept))

    def preprocess_both(self, text: str) -> tuple[Preprocessed, Preprocessed]:
        """Both variants of one text from a single tokenization: (keep-stopwords, final)."""
        tokens = tokenize(normalise(text))
        drop = self.stopwords
        alphabetic = [token for token in tokens if token.isalpha()]
        kept = [token for token in alphabetic if token not in drop]
        return (
            Preprocessed(tokens, alphabetic, self._stems_of(alphabetic)),
            Preprocessed(tokens, kept, self._stems_of(kept)),
        )

    def final_stems(self, text: str) -> list[str]:
        """The vectorizers' tokenizer: the final preprocessing's stems."""
        return self.preprocess(text).stems
