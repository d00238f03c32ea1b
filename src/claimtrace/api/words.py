"""The notebook's preprocessing of one text, for Python: the claim page's first section (each
token's fate, the kept words, the stems and the tags) as an object."""

from __future__ import annotations

import os

from claimtrace.api.build import data_folder
from claimtrace.errors import DataError
from claimtrace.pipeline.preprocess import Preprocessor
from claimtrace.web.notebook import notebook_renderer, notebook_template
from claimtrace.web.views.walkthrough.words import preprocess_section

__all__ = ["Preprocessed", "preprocess"]


class Preprocessed:
    """A text as the notebook's preprocessing leaves it. :meth:`to_dict` is the claim page's
    ``"preprocess"`` section for the same text (``/claim/<id>.json``'s, or ``/live.json``'s)."""

    def __init__(self, text: str, section: dict):
        self.source_text = text
        self._section = section

    @property
    def tokens(self) -> list[str]:
        """nltk's tokens, before anything is dropped."""
        return self._section["tokens"]

    @property
    def dropped(self) -> dict[str, str]:
        """Each dropped token and why: ``"stopword"`` or ``"not alphabetic"``."""
        return {fate["token"]: fate["dropped"] for fate in self._section["token_fates"] if fate["dropped"]}

    @property
    def kept(self) -> list[str]:
        return self._section["kept"]

    @property
    def stems(self) -> list[str]:
        """Porter's stems of the kept words, in order: what the notebook stores."""
        return self._section["stems"]

    @property
    def tags(self) -> list[str]:
        """A claim's tags: its stems sorted, duplicates kept."""
        return self._section["tags"]

    @property
    def text(self) -> str:
        """The stems joined with spaces, as the notebook stored them."""
        return " ".join(self.stems)

    def to_dict(self) -> dict:
        return self._section

    def __repr__(self) -> str:
        return f"<claimtrace.Preprocessed {self.text!r}>"

    def _repr_html_(self) -> str:
        title = f"Preprocessing {self.source_text[:60]!r}"
        return notebook_template(
            notebook_renderer(None), "notebook.html", title, view="preprocess", t={"preprocess": self._section}
        )


def preprocess(text: str, data: str | os.PathLike | None = None) -> Preprocessed:
    """``text`` through the notebook's preprocessing (contractions, lowercase, punctuation to
    spaces, nltk's tokens, stopwords and non-alphabetic tokens dropped, Porter stems), with the
    stopword list of the data folder ``data`` (default: as the command line finds it)."""
    if not isinstance(text, str):
        raise DataError(f"text: a string, not {type(text).__name__}")
    preprocessor = Preprocessor.of_data_dir(data_folder(data))
    return Preprocessed(text, preprocess_section(preprocessor.preprocess(text), preprocessor.stopwords).data)
