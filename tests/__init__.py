"""claimtrace's tests, laid out as the package is: one folder per layer, one file per module.

Every folder is a package (it has an ``__init__.py``), so that pytest imports each test file by
its dotted path (``tests.pipeline.test_retrieval``, ``tests.evaluation.test_retrieval``): two
layers may each have a module of one name, and their tests keep the module's name. Shared code
is imported the same way: ``from tests.conftest import REPO``.
"""
