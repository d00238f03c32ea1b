"""One claim's whole trace through the pipeline, assembled from a build (the web site's data).

:class:`Tracer` reads a build's workdir lazily and keeps what it read; it answers

* :meth:`Tracer.trace` ``(claim_id)``: a course claim (train, dev or test) through every stage;
* :meth:`Tracer.trace_text` ``(text)``: any text, treated as a new claim (no gold, no batch);
* :meth:`Tracer.explore` ``(split)``: every claim of a split, with accuracies and confusions;
* :meth:`Tracer.table` : the classifier's 5,886 x 4 table ``g`` and its bias, for the browser;
* :meth:`Tracer.build_info` : what the build holds and which stages are missing.

Every answer is a JSON-serialisable dict: the HTML pages and the JSON routes render the same
dict. Each stage section carries ``"status"``: ``"ok"``, or ``"missing"`` with a ``"reason"``
naming what is not built yet (the page says so instead of failing).

Stage functions used (nothing here re-implements a stage):

* preprocess: :func:`claimtrace.preprocess.preprocess`;
* tagging: :func:`claimtrace.build.iter_tags` (the build's tags), :func:`claimtrace.tfidf.load`
  with :func:`claimtrace.tagging.restem` and :func:`claimtrace.tagging.tag_rows` (one passage's
  top ten recomputed with weights);
* retrieval: ``workdir/retrieval/<split>.jsonl`` when the build has it, else
  :func:`claimtrace.retrieval.retrieve_all`; per claim :class:`claimtrace.retrieval.Retriever`
  (``scores``, ``claim_vector``, ``retrieve``), :func:`claimtrace.retrieval.notebook_weights`;
  :func:`claimtrace.evaluate.evidence_scores` / :func:`claimtrace.evaluate.evaluate`;
* classifier: :func:`claimtrace.explain.load_classifier`, :func:`claimtrace.explain.evidence_texts`,
  :func:`claimtrace.classifier.train.encode` / ``make_rows``, the table's ``logits`` and
  ``contributions``, :func:`claimtrace.classifier.model.notebook_logits` (batches of 16 in file
  order) and one real forward call per claim to show the table's exactness.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import constants as C
from .. import data as data_layer
from ..data import Claim, DataError
from ..preprocess import preprocess, stopwords

#: The claim the walkthrough tells (the site's front page).
DEFAULT_CLAIM = "claim-752"
#: Splits the site shows, in this order.
SPLITS = ("dev", "train", "test")
#: A typed claim longer than this is refused with a clear message (the model reads 128 tokens).
MAX_TEXT_CHARS = 20_000
#: Rows of the "passed the filter" table kept in a trace (the count is always exact).
MAX_PASSED_ROWS = 100
#: Passages that came closest without passing, shown beside the filter.
NEAR_MISSES = 5
#: Traces kept in memory.
TRACE_CACHE = 512


class StageMissing(Exception):
    """A stage's artifact is not in the build (or its module is not installed yet)."""

    def __init__(self, stage: str, reason: str):
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


class UnknownClaim(LookupError):
    """No claim with this id in train, dev or test."""


class BadText(ValueError):
    """A typed claim that cannot be traced (empty, too long); the message says why."""


def _scores(retriever, claim_tags: str):
    """``Retriever.scores`` as (positions, cosine, overlap, score, shared, passing), whether the
    retrieval stage returns the passing mask or not (it gained it during development)."""
    out = retriever.scores(claim_tags)
    if len(out) == 6:
        return out
    positions, cosine, overlap, score, shared = out
    passing = (cosine > C.COSINE_THRESHOLD) & (overlap > C.OVERLAP_THRESHOLD) & (score > C.SCORE_THRESHOLD)
    return positions, cosine, overlap, score, shared, passing


@contextmanager
def _torch_single_thread():
    """One PyTorch thread for the site's small forward calls, restored after. On a busy machine
    two OpenMP threads waiting on each other made one claim's forward call 20x slower (0.5 s
    instead of 25 ms); one thread gives the same logits to within float rounding."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def missing(stage: str, reason: str) -> dict:
    return {"status": "missing", "stage": stage, "reason": reason}


def _f(x) -> float:
    return float(x)


# --- the tracer -----------------------------------------------------------------------------------


class Tracer:
    """A build's pipeline, read lazily, answering traces (see the module docstring).

    workdir: a ``claimtrace build`` workdir. data_dir: the course data (default: found as the
    CLI finds it). classifier_dir: a ``claimtrace train`` folder (default: the shipped checkpoint).
    """

    def __init__(self, workdir: str | Path, data_dir: str | Path | None = None,
                 classifier_dir: str | Path | None = None):
        from ..build import Workdir

        self.work = Workdir(Path(workdir))
        self.data_dir = data_layer.find_data_dir(data_dir)
        stopwords(self.data_dir)  # the preprocessing needs them: fail now, clearly, if absent
        self.classifier_dir = None if classifier_dir is None else Path(classifier_dir)
        self._memo: dict[Any, Any] = {}
        self._key_locks: dict[Any, threading.Lock] = {}
        self._guard = threading.Lock()  # guards _key_locks, _traces, _futures, _progress
        self._retriever_lock = threading.RLock()  # the Retriever's scratch arrays are shared
        self._model_lock = threading.Lock()  # one PyTorch forward call at a time
        self._traces: OrderedDict[str, dict] = OrderedDict()
        self._futures: dict[str, Any] = {}
        self._executor = None
        self.progress: dict[str, dict] = {}

    # -- lazily loaded pieces, each computed once ------------------------------------------------

    def _once(self, key, make: Callable[[], Any]):
        """``make()`` once per key; a StageMissing is remembered too (raised again)."""
        try:
            value = self._memo[key]
        except KeyError:
            with self._guard:
                lock = self._key_locks.setdefault(key, threading.Lock())
            with lock:
                if key not in self._memo:
                    try:
                        self._memo[key] = make()
                    except StageMissing as err:
                        self._memo[key] = err
                value = self._memo[key]
        if isinstance(value, StageMissing):
            raise value
        return value

    def claims(self, split: str) -> dict[str, Claim]:
        return self._once(("claims", split), lambda: data_layer.load_claims(split, self.data_dir))

    def locate(self, claim_id: str) -> tuple[str, int]:
        """(split, position in its file) of a course claim; UnknownClaim otherwise."""
        def index():
            out = {}
            for split in SPLITS:
                for position, cid in enumerate(self.claims(split)):
                    out.setdefault(cid, (split, position))
            return out
        found = self._once("index", index).get(claim_id)
        if found is None:
            raise UnknownClaim(claim_id)
        return found

    def manifest(self) -> dict:
        def read():
            if not self.work.manifest.is_file():
                raise StageMissing("build", f"{self.work.root} holds no build.json: run "
                                   f"`claimtrace build --demo --workdir {self.work.root}` first")
            return self.work.read_manifest()
        return self._once("manifest", read)

    def corpus(self) -> dict[str, str]:
        """The build's passages, id -> text."""
        def read():
            source = Path(self.manifest()["corpus"]["source"])
            if not source.is_file():
                source = self.work.demo_evidence
            if not source.is_file():
                raise StageMissing("build", f"the build's corpus {source} is gone")
            return dict(data_layer.iter_evidence(source, check_md5=False))
        return self._once("corpus", read)

    def gold_texts(self) -> dict[str, str]:
        """Gold passages of train and dev (rebuilt from CLIMATE-FEVER), id -> text."""
        return self._once("gold", lambda: data_layer.gold_passages(self.data_dir))

    def passage_text(self, evidence_id: str) -> str | None:
        try:
            text = self.corpus().get(evidence_id)
        except StageMissing:
            text = None
        return text if text is not None else self.gold_texts().get(evidence_id)

    def tags(self) -> dict:
        """The build's passage tags: ``ids``, ``tags`` (lists), ``nopad``, ``position``."""
        def read():
            from ..build import iter_tags

            self.manifest()
            if not self.work.tags_dir.is_dir():
                raise StageMissing("tagging", "the build has no passage tags (tagging/tags/) yet")
            ids, tags, nopad = [], [], []
            try:
                for row in iter_tags(self.work):
                    ids.append(row["id"])
                    tags.append(row["tags"])
                    nopad.append(row.get("nopad", row["tags"]))
            except FileNotFoundError as err:
                raise StageMissing("tagging", f"the tagging stage is not finished ({err.filename} is missing)") from None
            return {"ids": ids, "tags": tags, "nopad": nopad, "position": {i: p for p, i in enumerate(ids)}}
        return self._once("tags", read)

    def tagging_vectorizer(self):
        def read():
            from .. import tagging, tfidf

            self.manifest()
            if not self.work.vectorizer.is_file():
                raise StageMissing("tagging", "the build has no tagging vectorizer (tagging/vectorizer.npz) yet")
            return tfidf.load(self.work.vectorizer, tagging.restem)
        return self._once("tagging_vectorizer", read)

    def tagging_summary(self) -> dict | None:
        def read():
            path = self.work.tagging_summary
            return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        return self._once("tagging_summary", read)

    def retriever(self):
        def make():
            try:
                from ..retrieval import Retriever
            except ImportError as err:
                raise StageMissing("retrieval", f"the retrieval stage is not installed yet ({err})") from None
            tags = self.tags()
            return Retriever(tags["ids"], tags["tags"])
        return self._once("retriever", make)

    def retrieval_records(self, split: str) -> dict:
        """``{"source": "build"|"computed", "records": {claim_id: record}}`` for a split."""
        def make():
            path = self.work.root / "retrieval" / f"{split}.jsonl"  # build.Workdir.retrieval(split)
            if path.is_file():
                records = {}
                for line in path.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        row = json.loads(line)
                        records[row["claim_id"]] = row
                claims = self.claims(split)
                if set(records) >= set(claims):
                    return {"source": "build", "path": str(path), "records": {cid: records[cid] for cid in claims}}
            from ..retrieval import retrieve_all

            tags = self.tags()
            with self._retriever_lock:
                rows = retrieve_all(tags["ids"], tags["tags"], self.claims(split), retriever=self.retriever())
            return {"source": "computed", "path": None, "records": {r["claim_id"]: r for r in rows}}
        return self._once(("retrieval", split), make)

    def classifier(self):
        def make():
            try:
                from ..explain import load_classifier
            except ImportError as err:
                raise StageMissing("classifier", f"the classifier stage is not installed yet ({err})") from None
            try:
                return load_classifier(self.classifier_dir)
            except DataError as err:
                raise StageMissing("classifier", f"no classifier checkpoint: {err}") from None
        return self._once("classifier", make)

    def evidence(self, split: str, source: str) -> dict[str, list[str]]:
        """claim id -> passage texts the classifier reads: ``gold`` or ``retrieved``."""
        def make():
            from ..explain import evidence_texts

            claims = self.claims(split)
            if source == "gold":
                if any(c.label is None for c in claims.values()):
                    raise StageMissing("classifier", f"{split} claims have no gold evidence")
                # the build's own text of a gold passage when it has one (as the build's
                # classifier stage reads it), else the text rebuilt from CLIMATE-FEVER
                gold = self.gold_texts()
                try:
                    corpus = self.corpus()
                except StageMissing:
                    corpus = {}
                return {cid: [t for t in (corpus.get(i, gold.get(i)) for i in c.evidences) if t is not None]
                        for cid, c in claims.items()}
            records = self.retrieval_records(split)["records"]
            return evidence_texts({cid: r["evidences"] for cid, r in records.items()}, self.corpus())
        return self._once(("evidence", split, source), make)

    def encoded(self, split: str, source: str) -> dict:
        """A split's model inputs in file order and their claim-alone logits (the exact table)."""
        def make():
            from ..classifier.train import encode, make_rows

            classifier = self.classifier()
            encoded = encode(make_rows(self.claims(split), self.evidence(split, source)), classifier.vocab)
            return {
                "claim_ids": encoded.claim_ids,
                "texts": encoded.texts,
                "input_ids": encoded.input_ids,
                "row": {cid: i for i, cid in enumerate(encoded.claim_ids)},
                "alone": classifier.table.logits(encoded.input_ids.numpy()),
            }
        return self._once(("encoded", split, source), make)

    def build_verdicts(self, split: str, source: str) -> dict | None:
        """The build's verdicts (``classifier/<split>.json``) for one evidence source, when the
        build made them with the checkpoint this site uses: its claim-alone logits must equal the
        table's for every claim. None otherwise (the site then runs the model itself)."""
        def read():
            if self.classifier_dir is not None:
                return None  # the build uses the shipped checkpoint
            path = self.work.root / "classifier" / f"{split}.json"
            if not path.is_file():
                return None
            verdicts = json.loads(path.read_text(encoding="utf-8"))
            encoded = self.encoded(split, source)
            try:
                alone = np.array([verdicts[cid][source]["alone"]["logits"] for cid in encoded["claim_ids"]])
                notebook = np.array([verdicts[cid][source]["notebook"]["logits"] for cid in encoded["claim_ids"]])
            except (KeyError, TypeError):
                return None
            if alone.shape != encoded["alone"].shape or np.abs(alone - encoded["alone"]).max() > 1e-9:
                return None  # made with another checkpoint or other evidence
            return {"path": str(path), "notebook": notebook}
        return self._once(("build_verdicts", split, source), read)

    def notebook_batch(self, split: str, source: str, batch: int) -> np.ndarray:
        """Protocol "notebook" for one batch of 16 in file order: (batch size, 4) logits, from
        the build's verdicts when it has them, else by running the model on that batch."""
        def make():
            rows = slice(batch * C.BATCH_SIZE, (batch + 1) * C.BATCH_SIZE)
            stored = self.build_verdicts(split, source)
            if stored is not None:
                return stored["notebook"][rows]
            from ..classifier.model import notebook_logits

            ids = self.encoded(split, source)["input_ids"][rows]
            with self._model_lock, _torch_single_thread():
                return notebook_logits(self.classifier().model, ids).double().numpy()
        return self._once(("notebook", split, source, batch), make)

    def predictions(self, split: str, source: str) -> dict:
        """Both protocols over a whole split in file order (the notebook protocol batch by batch,
        each batch cached: a claim's page computes only its own batch)."""
        def make():
            encoded = self.encoded(split, source)
            n_batches = (len(encoded["claim_ids"]) + C.BATCH_SIZE - 1) // C.BATCH_SIZE
            blocks = []
            for b in range(n_batches):
                with self._guard:
                    self.progress[f"{split}/{source}"] = {"done": b, "batches": n_batches}
                blocks.append(self.notebook_batch(split, source, b))
            with self._guard:
                self.progress[f"{split}/{source}"] = {"done": n_batches, "batches": n_batches}
            notebook = np.concatenate(blocks) if blocks else np.zeros((0, len(C.LABELS)))
            return {**encoded, "logits": {"alone": encoded["alone"], "notebook": notebook}}
        return self._once(("predictions", split, source), make)

    # -- one claim ---------------------------------------------------------------------------------

    def trace(self, claim_id: str) -> dict:
        """A course claim through every stage. UnknownClaim when no split has it."""
        cached = self._traces.get(claim_id)
        if cached is not None:
            return cached
        split, position = self.locate(claim_id)
        claim = self.claims(split)[claim_id]
        result = self._assemble(claim.text, claim=claim, split=split, position=position)
        with self._guard:
            self._traces[claim_id] = result
            while len(self._traces) > TRACE_CACHE:
                self._traces.popitem(last=False)
        return result

    def trace_text(self, text: str) -> dict:
        """Any text as a new claim: every stage, no gold passages, no notebook batch."""
        if not isinstance(text, str) or not text.strip():
            raise BadText("Type a claim: the text is empty.")
        if len(text) > MAX_TEXT_CHARS:
            raise BadText(
                f"That text is {len(text):,} characters; a claim here may have at most {MAX_TEXT_CHARS:,}. "
                f"(Claims in the course data are at most a few hundred characters, and the classifier reads "
                f"only its first {C.MAX_LEN} tokens anyway.)"
            )
        return self._assemble(text)

    def _assemble(self, text: str, claim: Claim | None = None, split: str | None = None,
                  position: int | None = None) -> dict:
        notes: list[str] = []
        pre = preprocess(text, data_dir=self.data_dir)
        gold = list(claim.evidences) if claim is not None and claim.label is not None else []
        if claim is not None:
            head = {"kind": "claim", "id": claim.id, "split": split, "position": position,
                    "text": claim.text, "label": claim.label, "gold": gold}
        else:
            head = {"kind": "text", "id": None, "split": None, "position": None,
                    "text": text, "label": None, "gold": []}
        result: dict[str, Any] = {"claim": head, "build": self.build_info(brief=True)}
        result["preprocess"] = self._preprocess_section(pre)
        with self._retriever_lock:
            retrieval = self._retrieval_section(pre.tags(), claim, split, gold, notes)
        result["retrieval"] = retrieval
        retrieved = retrieval.get("evidences") or []
        tagged_id = gold[0] if gold else (retrieved[0]["id"] if retrieved else None)
        result["tagging"] = self._tagging_section(tagged_id, "gold" if gold else "retrieved", notes)
        # The two vectors are shown for the passage that tells most: the first retrieved gold
        # passage, else the first retrieved one, else the first gold one.
        vector_id, vector_role = tagged_id, "gold" if gold else "retrieved"
        for e in retrieved:
            if e["gold"]:
                vector_id, vector_role = e["id"], "retrieved gold"
                break
        else:
            if retrieved:
                vector_id, vector_role = retrieved[0]["id"], "retrieved"
        with self._retriever_lock:
            result["vectorisation"] = self._vectorisation_section(pre.tags(), vector_id, vector_role)
        result["classifier"] = self._classifier_section(text, claim, split, retrieval, notes)
        if not pre.stems:
            notes.insert(0, "No word survived the preprocessing (stopwords, digits and punctuation are dropped): "
                            "the claim has no tags.")
        result["notes"] = notes
        return result

    # -- sections ----------------------------------------------------------------------------------

    def _preprocess_section(self, pre) -> dict:
        drop = stopwords(self.data_dir)
        tokens = []
        for token in pre.tokens:
            if token in drop:
                why = "stopword"
            elif not token.isalpha():
                why = "not alphabetic"
            else:
                why = None
            tokens.append({"token": token, "dropped": why})
        return {
            "status": "ok",
            "tokens": pre.tokens,
            "token_fates": tokens,
            "kept": pre.kept,
            "stems": pre.stems,
            "tags": sorted(pre.stems),
        }

    def _passage_top(self, text: str) -> dict:
        """One passage's top ten under the tagging vectorizer, recomputed with weights."""
        from ..tagging import tag_rows

        vectorizer = self.tagging_vectorizer()
        names = vectorizer.feature_names
        stems = preprocess(text, data_dir=self.data_dir).text()
        tagged = tag_rows(vectorizer.transform([stems]), names)[0]
        nonzero = sum(w > 0.0 for w in tagged.weights)
        top = []
        for rank, (index, weight) in enumerate(zip(tagged.top, tagged.weights), 1):
            name = str(names[index])
            alphabetic = name.isalpha()
            top.append({"rank": rank, "feature": name, "index": int(index), "weight": _f(weight),
                        "padding": weight == 0.0, "alphabetic": alphabetic, "tag": alphabetic})
        return {"stems": stems, "top": top, "tags": tagged.tags, "nopad": tagged.nopad, "nonzero": int(nonzero)}

    def _tagging_section(self, passage_id: str | None, role: str, notes: list[str]) -> dict:
        try:
            vectorizer = self.tagging_vectorizer()
            tags = self.tags()
        except StageMissing as err:
            return missing(err.stage, err.reason)
        summary = self.tagging_summary() or {}
        corpus = self.manifest()["corpus"]
        last = str(vectorizer.feature_names[-1])
        section: dict[str, Any] = {
            "status": "ok",
            "corpus": corpus,
            "features": len(vectorizer.feature_names),
            "fit_documents": int(vectorizer.n_docs_),
            "ngram_range": list(vectorizer.ngram_range),
            "per_passage": C.TAGS_PER_PASSAGE,
            "last_feature": last,
            "last_feature_alphabetic": last.isalpha(),
            "passages": len(tags["ids"]),
            "passages_with_last_feature": summary.get("passages_with_last_feature"),
            "share_with_last_feature": summary.get("share_with_last_feature"),
            "untagged_passages": summary.get("untagged_passages"),
            "padded_passages": summary.get("passages_whose_tags_include_padding"),
            "max_features_cut": summary.get("max_features_cut"),
            "passage": None,
            "padding_example": self._padding_example(last),
        }
        if passage_id is not None:
            text = self.passage_text(passage_id)
            if text is None:
                notes.append(f"Passage {passage_id} is not in this build's corpus.")
            else:
                detail = self._passage_top(text)
                position = tags["position"].get(passage_id)
                stored = tags["tags"][position] if position is not None else None
                detail.update({"id": passage_id, "text": text, "role": role, "build_tags": stored,
                               "matches_build": stored is None or stored == detail["tags"]})
                if stored is not None and stored != detail["tags"]:
                    notes.append(f"The tags recomputed here for {passage_id} differ from the build's: "
                                 f"{' '.join(detail['tags'])} vs {' '.join(stored)}.")
                section["passage"] = detail
        return section

    def _padding_example(self, last: str) -> dict | None:
        """A short passage whose tags include the last vocabulary entry only as padding."""
        def find():
            tags = self.tags()
            best = None
            for position, (row, nopad) in enumerate(zip(tags["tags"], tags["nopad"])):
                if last in row and last not in nopad:
                    text = self.passage_text(tags["ids"][position]) or ""
                    if best is None or len(text) < len(best[1]):
                        best = (position, text)
                    if len(text) < 60:
                        break
            if best is None:
                return None
            position, text = best
            detail = self._passage_top(text)
            detail.update({"id": tags["ids"][position], "text": text, "build_tags": tags["tags"][position]})
            return detail
        return self._once(("padding_example", last), find)

    def _vectorisation_section(self, claim_tags: str, passage_id: str | None, role: str = "gold") -> dict:
        try:
            retriever = self.retriever()
            tags = self.tags()
        except StageMissing as err:
            return missing(err.stage, err.reason)
        from ..retrieval import notebook_weights
        from ..tagging import final_stems

        names = retriever.vectorizer.feature_names
        terms, values = retriever.claim_vector(claim_tags)
        claim_terms = {str(names[t]): _f(v) for t, v in zip(terms.tolist(), values.tolist())}
        restemmed = final_stems(claim_tags.lower())
        section: dict[str, Any] = {
            "status": "ok",
            "features": len(names),
            "fit_passages": len(retriever),
            "excluded_passages": int(retriever.excluded),
            "claim": {
                "tags": claim_tags.split(),
                "restemmed": restemmed,
                "out_of_vocabulary": [t for t in restemmed if t not in retriever.vocabulary],
                "terms": [{"term": k, "weight": v} for k, v in sorted(claim_terms.items())],
            },
            "passage": None,
        }
        if passage_id is None:
            return section
        position = tags["position"].get(passage_id)
        if position is None:
            section["passage"] = {"id": passage_id, "role": role, "in_build": False}
            return section
        passage_tags = tags["tags"][position]
        tag_string = " ".join(passage_tags)
        retrieved = tag_string not in C.CSV_NA_TAGS and bool(passage_tags)
        row = notebook_weights(retriever.vectorizer.counts([tag_string]), retriever.idf)
        passage_terms = {str(names[i]): _f(v) for i, v in zip(row.indices.tolist(), row.data.tolist())}
        shared_terms = sorted(set(claim_terms) & set(passage_terms))
        products = [{"term": t, "claim": claim_terms[t], "passage": passage_terms[t],
                     "product": claim_terms[t] * passage_terms[t]} for t in shared_terms]
        claim_set, passage_set = set(claim_tags.split()), set(passage_tags)
        shared = claim_set & passage_set
        cosine = overlap = score = 0.0
        if retrieved:
            positions, cos, ov, sc, _, _ = _scores(retriever, claim_tags)
            index = {retriever.ids[p]: k for k, p in enumerate(positions.tolist())}
            k = index.get(passage_id)
            if k is not None:
                cosine, overlap, score = _f(cos[k]), _f(ov[k]), _f(sc[k])
        elif claim_set and passage_set:
            overlap = len(shared) / min(len(claim_set), len(passage_set))
        section["passage"] = {
            "id": passage_id,
            "role": role,
            "in_build": True,
            "retrievable": retrieved,
            "tags": passage_tags,
            "terms": [{"term": k, "weight": v} for k, v in sorted(passage_terms.items())],
            "products": products,
            "cosine": cosine,
            "shared_tags": sorted(shared),
            "shared": len(shared),
            "claim_tag_count": len(claim_set),
            "passage_tag_count": len(passage_set),
            "overlap": overlap,
            "score": score,
            "passes": cosine > C.COSINE_THRESHOLD and overlap > C.OVERLAP_THRESHOLD,
        }
        return section

    def _retrieval_section(self, claim_tags: str, claim: Claim | None, split: str | None, gold: list[str],
                           notes: list[str]) -> dict:
        try:
            retriever = self.retriever()
            from ..evaluate import evidence_scores
            from ..retrieval import notebook_order
        except StageMissing as err:
            return missing(err.stage, err.reason)
        except ImportError as err:
            return missing("retrieval", f"the retrieval stage is not installed yet ({err})")
        if claim is not None:
            stored = self.retrieval_records(split)
            record = stored["records"][claim.id]
            source = stored["source"]
        else:
            result = retriever.retrieve(claim_tags)
            record = retriever.as_record("typed claim", result, ())
            source = "computed"
        gold_set = set(gold)
        positions, cosine, overlap, score, shared, passing = _scores(retriever, record["tags"])
        rows = np.flatnonzero(passing)
        kept_rank: dict[int, int] = {}
        if len(rows):
            order = notebook_order(cosine[rows], overlap[rows], score[rows], shared[rows])
            kept_rank = {int(rows[o]): rank for rank, o in enumerate(order.tolist(), 1)}
        display = rows[np.argsort(-score[rows], kind="stable")] if len(rows) else rows

        def describe(k: int) -> dict:
            pid = retriever.ids[int(positions[k])]
            return {"id": pid, "text": self.passage_text(pid), "tags": retriever.tags[int(positions[k])].split(),
                    "cosine": _f(cosine[k]), "overlap": _f(overlap[k]), "score": _f(score[k]),
                    "shared": int(shared[k]), "gold": pid in gold_set}

        passed_rows = []
        for k in display[:MAX_PASSED_ROWS].tolist():
            row = describe(k)
            row["kept"] = k in kept_rank
            row["kept_rank"] = kept_rank.get(k)
            row["returned"] = kept_rank.get(k, C.MAX_EVIDENCES + 1) <= C.MAX_EVIDENCES
            passed_rows.append(row)
        failing = np.flatnonzero(~passing)
        near = failing[np.argsort(-score[failing], kind="stable")][:NEAR_MISSES] if len(failing) else failing
        near_misses = []
        for k in near.tolist():
            row = describe(k)
            why = []
            if cosine[k] <= C.COSINE_THRESHOLD:
                why.append(f"cosine {cosine[k]:.3f} is not above {C.COSINE_THRESHOLD}")
            if overlap[k] <= C.OVERLAP_THRESHOLD:
                why.append(f"overlap {overlap[k]:.3f} is not above {C.OVERLAP_THRESHOLD}")
            row["why"] = why
            near_misses.append(row)
        by_id = {k["id"]: k for k in record["kept"]}
        evidences = []
        for rank, pid in enumerate(record["evidences"], 1):
            kept = by_id.get(pid, {})
            evidences.append({"rank": rank, "id": pid, "text": self.passage_text(pid), "gold": pid in gold_set,
                              "cosine": kept.get("cosine"), "overlap": kept.get("overlap"),
                              "score": kept.get("score"), "shared": kept.get("shared")})
        max_shared = max((r["shared"] for r in record["kept"]), default=0) if not record["fallback"] else None
        section: dict[str, Any] = {
            "status": "ok",
            "source": source,
            "claim_tags": record["tags"],
            "thresholds": {"cosine": C.COSINE_THRESHOLD, "overlap": C.OVERLAP_THRESHOLD,
                           "score": C.SCORE_THRESHOLD, "max_evidences": C.MAX_EVIDENCES,
                           "cosine_in_score": C.COSINE_WEIGHT_IN_SCORE},
            "candidates": int(len(positions)),
            "passages": len(retriever),
            "passed": int(record["passed"]),
            "passed_rows": passed_rows,
            "passed_rows_truncated": max(0, int(len(rows)) - MAX_PASSED_ROWS),
            "max_shared": max_shared,
            "kept": len(record["kept"]) if not record["fallback"] else 0,
            "fallback": bool(record["fallback"]),
            "near_misses": near_misses,
            "evidences": evidences,
            "gold": [{"id": g, "retrieved": g in record["evidences"],
                      "in_build": g in self.tags()["position"]} for g in gold],
            "scores": None,
            "split": None,
        }
        if claim is not None and claim.label is not None:
            precision, recall, f = evidence_scores(record["evidences"], gold)
            section["scores"] = {"precision": precision, "recall": recall, "F": f,
                                 "gold_retrieved": sum(g in set(record["evidences"]) for g in gold),
                                 "gold_total": len(gold)}
        if split is not None:
            records = self.retrieval_records(split)["records"].values()
            fallbacks = sum(bool(r["fallback"]) for r in records)
            section["split"] = {"name": split, "claims": len(records), "fallbacks": fallbacks,
                                "fallback_share": fallbacks / len(records) if records else 0.0}
        if record["fallback"]:
            notes.append("Nothing passed the filter: the retrieved passages are the notebook's fallback, "
                         "the top six by score over every passage.")
        return section

    def _classifier_section(self, text: str, claim: Claim | None, split: str | None, retrieval: dict,
                            notes: list[str]) -> dict:
        try:
            classifier = self.classifier()
        except StageMissing as err:
            return missing(err.stage, err.reason)
        if retrieval.get("status") != "ok":
            return missing("retrieval", "the model reads the retrieved passages, and retrieval is not built yet: "
                                        + retrieval.get("reason", ""))
        import torch

        from ..classifier.inputs import row_text

        vocab = classifier.vocab
        pad_id, unk_id = vocab.index[C.PAD], vocab.index[C.UNK]
        notebook = None
        if claim is not None:
            encoded = self.encoded(split, "retrieved")
            row = encoded["row"][claim.id]
            ids = encoded["input_ids"][row].tolist()
            model_text = encoded["texts"][row]
            batch = row // C.BATCH_SIZE
            batch_ids = encoded["claim_ids"][batch * C.BATCH_SIZE:(batch + 1) * C.BATCH_SIZE]
            batch_logits = self.notebook_batch(split, "retrieved", batch)
            logits = batch_logits[row - batch * C.BATCH_SIZE]
            neighbours = []
            for k, cid in enumerate(batch_ids):
                if cid == claim.id:
                    continue
                neighbours.append({"id": cid, "label": self.claims(split)[cid].label,
                                   "verdict": C.LABELS[int(np.argmax(batch_logits[k]))]})
            notebook = {"logits": [_f(x) for x in logits], "verdict": C.LABELS[int(np.argmax(logits))],
                        "batch": batch, "position_in_batch": batch_ids.index(claim.id),
                        "batch_size": len(batch_ids), "neighbours": neighbours}
        else:
            passages = [e["text"] for e in retrieval["evidences"] if e["text"] is not None]
            model_text = row_text(text, passages)
            ids = vocab.encode(model_text)
        words = model_text.split()
        tokens = vocab.decode(ids)
        alone = classifier.table.logits(np.asarray(ids))
        with torch.no_grad(), self._model_lock, _torch_single_thread():
            torch_alone = classifier.model.eval()(torch.tensor([ids]))[0].double().numpy()
        shares = classifier.table.contributions(ids)
        pad_count = ids.count(pad_id)
        real = len(ids) - pad_count
        per_token = []
        for t, (token, token_id) in enumerate(zip(tokens, ids)):
            if token_id == pad_id:
                continue
            word = token
            if 0 < t <= len(words) and t < real - 1:
                word = words[t - 1]
            per_token.append({"position": t, "token": token, "word": word, "id": int(token_id),
                              "unknown": token_id == unk_id, "contribution": [_f(x) for x in shares[t]]})
        padding = {"token": C.PAD, "id": pad_id, "count": pad_count,
                   "contribution": [_f(x) for x in classifier.table.g[pad_id] * pad_count / len(ids)]}
        words_total = np.sum([p["contribution"] for p in per_token], axis=0) if per_token else np.zeros(len(C.LABELS))
        margin = _margin(alone, classifier.table.bias, per_token, padding)
        unknown = sum(p["unknown"] for p in per_token)
        truncated = len(words) + 2 > C.MAX_LEN
        if unknown and unknown == len(per_token) - 2:
            notes.append("None of the model input's words is in the classifier's 5,886-word vocabulary: "
                         "every one became <unk>.")
        section: dict[str, Any] = {
            "status": "ok",
            "checkpoint": Path(str(classifier.checkpoint)).name,
            "checkpoint_path": str(classifier.checkpoint),
            "evidence_source": "retrieved",
            "vocabulary": len(vocab),
            "text": model_text,
            "words": len(words),
            "tokens": tokens,
            "input_ids": [int(i) for i in ids],
            "real_tokens": real,
            "pad_tokens": pad_count,
            "unknown_tokens": int(unknown),
            "truncated": truncated,
            "dropped_words": max(0, len(words) + 2 - C.MAX_LEN),
            "architecture": {**architecture(),
                             "parameters": int(sum(p.numel() for p in classifier.model.parameters()))},
            "alone": {
                "logits": [_f(x) for x in alone],
                "verdict": C.LABELS[int(np.argmax(alone))],
                "torch_logits": [_f(x) for x in torch_alone],
                "max_abs_diff_table_vs_torch": _f(np.abs(alone - torch_alone).max()),
            },
            "notebook": notebook,
            "contributions": {
                "labels": list(C.LABELS),
                "bias": [_f(x) for x in classifier.table.bias],
                "tokens": per_token,
                "padding": padding,
                "words_total": [_f(x) for x in words_total],
                "margin": margin,
            },
            "gold_evidence": None,
        }
        if claim is not None and claim.label is not None:
            gold = self.encoded(split, "gold")
            r = gold["row"][claim.id]
            notebook_gold = self.notebook_batch(split, "gold", r // C.BATCH_SIZE)[r % C.BATCH_SIZE]
            section["gold_evidence"] = {"alone": C.LABELS[int(np.argmax(gold["alone"][r]))],
                                        "notebook": C.LABELS[int(np.argmax(notebook_gold))]}
        return section

    # -- a whole split -----------------------------------------------------------------------------

    def explore(self, split: str) -> dict:
        """Every claim of a split: label, retrieval figures, verdicts per evidence and protocol;
        accuracy and confusion for {gold, retrieved} x {alone, notebook}; the course's scores."""
        if split not in SPLITS:
            raise UnknownClaim(split)
        return self._once(("explore", split), lambda: self._explore(split))

    def explore_when_ready(self, split: str, wait: float) -> dict | None:
        """:meth:`explore`, computed in the background; None when it is not ready within ``wait``
        seconds (the notebook protocol over a whole split takes about a second per batch of 16)."""
        from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout

        if split not in SPLITS:
            raise UnknownClaim(split)
        if ("explore", split) in self._memo:
            return self.explore(split)
        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claimtrace-explore")
            future = self._futures.get(split)
            if future is None:
                future = self._futures[split] = self._executor.submit(self.explore, split)
        try:
            return future.result(timeout=wait)
        except FutureTimeout:
            return None

    def _explore(self, split: str) -> dict:
        claims = self.claims(split)
        labelled = all(c.label is not None for c in claims.values())
        out: dict[str, Any] = {"split": split, "labels": list(C.LABELS), "labelled": labelled,
                               "claims": [], "build": self.build_info(brief=True)}
        try:
            retrieval = self.retrieval_records(split)
            records = retrieval["records"]
            out["retrieval"] = {"status": "ok", "source": retrieval["source"]}
        except StageMissing as err:
            records = None
            out["retrieval"] = missing(err.stage, err.reason)
        sources = ["gold", "retrieved"] if labelled else ["retrieved"]
        verdicts: dict[str, dict] = {}
        classifier_status: dict[str, Any] = {"status": "ok"}
        for source in sources:
            try:
                if source == "retrieved" and records is None:
                    raise StageMissing("retrieval", out["retrieval"]["reason"])
                verdicts[source] = self.predictions(split, source)
            except StageMissing as err:
                classifier_status = missing(err.stage, err.reason) if err.stage == "classifier" else classifier_status
                verdicts[source] = None
        out["classifier"] = classifier_status
        from ..evaluate import evidence_scores

        f_values = []
        for position, (cid, claim) in enumerate(claims.items()):
            row: dict[str, Any] = {"id": cid, "position": position, "text": claim.text, "label": claim.label,
                                   "gold_count": len(claim.evidences) if labelled else None}
            if records is not None:
                record = records[cid]
                row["fallback"] = bool(record["fallback"])
                row["passed"] = int(record["passed"])
                row["retrieved"] = len(record["evidences"])
                if labelled:
                    row["F"] = evidence_scores(record["evidences"], claim.evidences)[2]
                    f_values.append(row["F"])
            for source, pred in verdicts.items():
                if pred is None:
                    continue
                r = pred["row"][cid]
                row[source] = {p: C.LABELS[int(np.argmax(pred["logits"][p][r]))] for p in C.PROTOCOLS}
            out["claims"].append(row)
        # accuracy and confusion
        accuracy: dict[str, Any] = {}
        for source in ("gold", "retrieved"):
            pred = verdicts.get(source)
            if pred is None or not labelled:
                accuracy[source] = None
                continue
            accuracy[source] = {}
            for protocol in C.PROTOCOLS:
                matrix = np.zeros((len(C.LABELS), len(C.LABELS)), dtype=int)
                for row in out["claims"]:
                    matrix[C.LABEL_IDS[row["label"]], C.LABEL_IDS[row[source][protocol]]] += 1
                correct = int(np.trace(matrix))
                accuracy[source][protocol] = {"correct": correct, "claims": len(claims),
                                              "accuracy": correct / len(claims) if claims else 0.0,
                                              "confusion": matrix.tolist()}
        out["accuracy"] = accuracy
        distribution: dict[str, Any] = {}
        for source, pred in verdicts.items():
            if pred is None:
                continue
            distribution[source] = {p: {label: sum(1 for row in out["claims"] if row[source][p] == label)
                                        for label in C.LABELS} for p in C.PROTOCOLS}
        out["verdict_counts"] = distribution
        out["verdicts_source"] = {source: ("build" if self.build_verdicts(split, source) is not None else "computed")
                                  for source, pred in verdicts.items() if pred is not None}
        out["retrieval_variants"] = None
        summary_path = self.work.root / "retrieval" / "summary.json"
        if split == "dev" and summary_path.is_file():
            out["retrieval_variants"] = json.loads(summary_path.read_text(encoding="utf-8")).get("variants_dev")
        if records is not None:
            fallbacks = sum(row["fallback"] for row in out["claims"])
            out["fallbacks"] = fallbacks
            out["fallback_share"] = fallbacks / len(claims) if claims else 0.0
        if labelled and records is not None and verdicts.get("retrieved") is not None:
            from ..evaluate import evaluate

            course = {}
            for protocol in C.PROTOCOLS:
                predicted = {row["id"]: Claim(row["id"], row["text"], row["retrieved"][protocol],
                                              tuple(records[row["id"]]["evidences"])) for row in out["claims"]}
                result = evaluate(predicted, claims)
                course[protocol] = {"F": result.F, "A": result.A, "HM": result.HM}
            out["course_scores"] = course
        else:
            out["course_scores"] = None
        return out

    # -- the table and the build -------------------------------------------------------------------

    def table(self) -> dict:
        """The classifier's exact table for the browser: ``g`` as little-endian float32, base64."""
        def make():
            classifier = self.classifier()
            g = np.ascontiguousarray(classifier.table.g, dtype="<f4")
            return {
                "labels": list(C.LABELS),
                "formula": "logits = bias + (1/128) * sum_t g[token_t]  (a claim alone, eval mode)",
                "shape": list(g.shape),
                "max_len": C.MAX_LEN,
                "special": {"unk": C.UNK, "cls": C.CLS, "sep": C.SEP, "pad": C.PAD},
                "bias": [_f(x) for x in classifier.table.bias],
                "vocab": list(classifier.vocab.tokens),
                "g_encoding": "base64 of little-endian float32, row-major (vocab x labels)",
                "g_float32_bytes": int(g.nbytes),
                "g": base64.b64encode(g.tobytes()).decode("ascii"),
                "checkpoint": Path(str(classifier.checkpoint)).name,
            }
        return self._once("table", make)

    def build_info(self, brief: bool = False) -> dict:
        """What the build holds: its corpus and each stage's status."""
        stages: dict[str, Any] = {}
        try:
            manifest = self.manifest()
            corpus = manifest.get("corpus")
        except StageMissing as err:
            manifest, corpus = None, None
            stages["build"] = missing(err.stage, err.reason)
        for name, probe in (("tagging", self.tags), ("retrieval", self.retriever), ("classifier", self.classifier)):
            try:
                probe()
                stages[name] = {"status": "ok"}
            except StageMissing as err:
                stages[name] = missing(err.stage, err.reason)
        info = {"workdir": str(self.work.root), "corpus": corpus, "stages": stages}
        if not brief:
            info["retrieval_files"] = {s: (self.work.root / "retrieval" / f"{s}.jsonl").is_file() for s in SPLITS}
            try:
                classifier = self.classifier()
                info["checkpoint"] = str(classifier.checkpoint)
            except StageMissing:
                info["checkpoint"] = None
            info["tagging_summary"] = self.tagging_summary() if manifest else None
        return info

    def warm(self, splits=SPLITS) -> None:
        """Load what the front page needs, then queue every split's Explore in the background
        (one at a time, dev first), so that a server's pages are ready when asked for."""
        try:
            self.trace(DEFAULT_CLAIM)
        except (StageMissing, UnknownClaim):
            pass
        for split in splits:
            self.explore_when_ready(split, 0.0)


def _margin(logits, bias, per_token: list[dict], padding: dict, shown: int = 5) -> dict:
    """The verdict's lead over the runner-up, split into bias, each token and the padding; the
    ``shown`` tokens pushing hardest each way."""
    order = np.argsort(-np.asarray(logits), kind="stable")
    win, second = int(order[0]), int(order[1])
    pushes = sorted(({"position": t["position"], "token": t["token"], "word": t["word"], "unknown": t["unknown"],
                      "push": t["contribution"][win] - t["contribution"][second]} for t in per_token),
                    key=lambda p: -p["push"])
    return {
        "verdict": C.LABELS[win], "runner_up": C.LABELS[second],
        "margin": _f(logits[win] - logits[second]),
        "bias": _f(bias[win] - bias[second]),
        "padding": _f(padding["contribution"][win] - padding["contribution"][second]),
        "tokens": _f(sum(p["push"] for p in pushes)),
        "for": pushes[:shown],
        "against": pushes[max(shown, len(pushes) - shown):][::-1],
    }


def architecture() -> dict:
    return {"vocabulary": C.VOCAB_SIZE, "embedding": C.EMBED_DIM, "layers": C.N_LAYERS, "heads": C.N_HEADS,
            "feed_forward": C.FF_DIM, "dropout": C.DROPOUT, "max_len": C.MAX_LEN, "epochs": C.EPOCHS,
            "optimizer": C.OPTIMIZER, "learning_rate": C.LEARNING_RATE, "batch_size": C.BATCH_SIZE,
            "labels": list(C.LABELS), "batch_first_bug": C.BATCH_FIRST_BUG}


# --- module-level conveniences --------------------------------------------------------------------

_TRACERS: dict[tuple, Tracer] = {}


def get_tracer(workdir, data_dir=None, classifier_dir=None) -> Tracer:
    key = (str(Path(workdir).resolve()), str(data_dir), str(classifier_dir))
    if key not in _TRACERS:
        _TRACERS[key] = Tracer(workdir, data_dir, classifier_dir)
    return _TRACERS[key]


def trace(claim_id: str, workdir, data_dir=None, classifier_dir=None) -> dict:
    """A course claim's whole trace from the build in ``workdir``."""
    return get_tracer(workdir, data_dir, classifier_dir).trace(claim_id)


def trace_text(text: str, workdir, data_dir=None, classifier_dir=None) -> dict:
    """Any text's whole trace from the build in ``workdir``."""
    return get_tracer(workdir, data_dir, classifier_dir).trace_text(text)
