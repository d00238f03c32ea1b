"""What tests share beyond fixtures: the local stand-in for the LLM providers (``fake_provider``),
seed-spread files (``seed_spread``), protocol "alone" for many claims in one encoder call
(``alone_stacked``) and a slice of the training data (``training_slice``)."""
