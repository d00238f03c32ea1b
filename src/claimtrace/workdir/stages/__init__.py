"""What each stage of the build computes and writes into a workdir, one module per stage group:
the corpus (``corpus``), tagging, retrieval with the quirk variants' records, the BM25 reference,
the classifier's verdicts, and the verdicts and scoreboard that say what each quirk cost
(``quirk_costs``). Each stage reads what earlier stages wrote through the build's one reader
(:class:`~claimtrace.workdir.reader.BuildReader`), skips every file that is there, and writes each file
whole (a temporary name, then renamed). :mod:`claimtrace.workdir.builder` runs them in order.
"""
