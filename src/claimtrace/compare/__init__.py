"""Other systems beside the notebook's: a predictions file compared claim by claim with the
build's pipeline (``runs``); a large language model asked the same claims with the build's
passages (``llm_client``: one call over HTTP, beside ``data.fetch`` the package's only network code; ``llm_run``: a
resumable run; ``llm_report``: a run read against the build and scored, docs/llm.md).

May import: everything below it, up to ``explain``.
"""
