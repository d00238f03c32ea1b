"""A slice of the training data: the first claims of train and dev, for an epoch in a test's time."""

from __future__ import annotations

from claimtrace.models.inputs import Encoded
from claimtrace.models.train import TrainingData


def first_claims(encoded: Encoded, n: int) -> Encoded:
    """The first ``n`` claims of an encoded split, in file order."""
    return Encoded(encoded.claim_ids[:n], encoded.texts[:n], encoded.input_ids[:n], encoded.labels[:n])


def training_slice(data: TrainingData) -> TrainingData:
    """The first 32 train claims and the first 16 dev claims, with the whole vocabulary."""
    return TrainingData(data.vocab, first_claims(data.train, 32), first_claims(data.dev, 16))
