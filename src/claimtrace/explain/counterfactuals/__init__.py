"""What would change a verdict: the smallest edits that flip it, each re-run through the pipeline.

``tokens``: on the model input, exact (the table: the fewest tokens to remove or to add for each
other label, found by sorting); ``trace``: any text through the whole pipeline, stage results
cached by what each stage reads; ``words``: the smallest sets of the claim's words whose removal
changes the verdict, every set up to a bound tried; ``passages``: each kept passage left out;
``batches``: each notebook batch-mate taken out of the claim's batch; ``report``: one claim's
counterfactuals (:func:`~claimtrace.explain.counterfactuals.report.counterfactuals`);
``fragility``: the shares over dev, with their intervals.

May import: everything below ``explain`` and ``explain``'s other modules; never a page.
"""
